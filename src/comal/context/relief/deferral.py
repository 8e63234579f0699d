"""Pressure in the middle of a tool loop: defer the event to the turn boundary when room allows.

An event mid tool loop must keep the whole current turn verbatim (its newest block is the turn
the next request continues), so its deepest cut is shallow and the facts of the loop's older
calls leave view. At the next turn boundary the finished turn can be covered like any other and
the cut goes deep. So when the request passes the threshold mid tool loop, the engine waits for
the boundary, provided what is left under the usable room (window − output reserve − margin)
still holds the rest of the turn as the session itself measured it:

    need = remaining × g + (peak − g)            (remaining calls at the mean growth of the
                                                  session's calls in view, one of them of the
                                                  largest; a call's growth inside a loop is its
                                                  message and results, not user text)
    defer when  estimate + need ≤ usable

`remaining` is the longest remaining run among the session's finished turns at least as long as
the current one; when no finished turn was that long, the session gives no measure of when the
loop ends, and the event happens now (waiting would only move the same mid-loop event later,
at a higher price per call). A call that would not fit is never sent: the next `prepare()`
relieves pressure as usual if the loop grows faster than measured.

Each deferral is recorded once per turn as a `pressure.deferred` entry (`docs/ledger.md`) with
the options weighed: deferring (the price per call while waiting) and relieving now (where a
checkpoint would land and what its stretch costs, equation 1 of `pressure.py`). The event at the
boundary then records `trigger: turn_boundary`. The view never reads these entries, so resumes
rebuild the same requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.measure.budget import Budget
from comal.context.relief.decisions import Option
from comal.context.relief.pressure import CACHED_RATE, Growth, stretch_cost
from comal.context.view.build import PartCost
from comal.context.view.conversation import Block
from comal.ledger.entry import Entry
from comal.ledger.records import Kind, PressureDeferred
from comal.ledger.store import Ledger

DEFERRED_KIND = Kind.PRESSURE_DEFERRED
TURN_TRIGGER = "turn_boundary"


@dataclass(frozen=True, slots=True)
class Deferral:
    """Why an over-threshold request mid tool loop can wait for the turn boundary."""

    remaining_calls: int
    need_tokens: int


def loop_growth(parts: Sequence[PartCost], scale: float = 1.0) -> Growth:
    """Tokens each model call in view appended inside its tool loop (its message and its
    results; user text belongs to no loop), on average and at the largest, calibrated."""
    sizes: list[int] = []
    current = -1
    for part in parts:
        if part.role == "assistant" and part.seq != current:
            sizes.append(0)
            current = part.seq
        if sizes and part.role in ("assistant", "result"):
            sizes[-1] += part.tokens
    if not sizes:
        return Growth(1.0, 1.0, 0)
    mean = max(1.0, sum(sizes) / len(sizes) * scale)
    return Growth(mean, max(1.0, max(sizes) * scale), len(sizes))


def turn_lengths(blocks: Sequence[Block]) -> tuple[list[int], int]:
    """Model calls of each finished turn, and of the current one so far (user turns only:
    calls before the first user message belong to no turn)."""
    finished: list[int] = []
    current: int | None = None
    for block in blocks:
        if block.role == "user":
            if current is not None and current > 0:
                finished.append(current)
            current = 0
        elif current is not None:
            current += 1
    return finished, current or 0


def remaining_calls(blocks: Sequence[Block]) -> int | None:
    """Calls the current turn may still make, as the session's finished turns measured it
    (the longest remaining run among those at least as long); None when no finished turn was
    as long, or the newest block is not a tool loop in progress."""
    if not blocks or blocks[-1].role != "assistant":
        return None
    finished, done = turn_lengths(blocks)
    runs = [length - done for length in finished if length >= done]
    return max(runs) if runs else None


def deferral(
    blocks: Sequence[Block], budget: Budget, estimate: int, growth: Growth
) -> Deferral | None:
    """A deferral to the turn boundary when the rest of the turn fits (module docstring)."""
    remaining = remaining_calls(blocks)
    if remaining is None:
        return None
    need = int(remaining * growth.mean + max(growth.peak - growth.mean, 0))
    if estimate + need > budget.usable:
        return None
    return Deferral(remaining, need)


def deferred_since(entries: Sequence[Entry], since_seq: int) -> bool:
    """Whether a deferral was recorded after `since_seq`."""
    return any(e.seq > since_seq for e in entries)


def record_deferral(
    ledger: Ledger,
    session_id: str,
    budget: Budget,
    estimate: int,
    growth: Growth,
    found: Deferral,
    now: Option,
) -> None:
    """Append the `pressure.deferred` entry: the wait, the event it replaces, their prices."""
    waiting = CACHED_RATE * (estimate + found.need_tokens / 2) + growth.mean
    defer = Option(
        "defer",
        estimate,
        0,
        waiting,
        0,
        True,
        f"the rest of the turn (~{found.remaining_calls} calls, ~{found.need_tokens:,} tokens)"
        f" fits the usable room {budget.usable:,}: the event waits for the turn boundary",
    )
    record = PressureDeferred(
        trigger="threshold",
        until=TURN_TRIGGER,
        before_tokens=estimate,
        threshold_tokens=budget.threshold,
        usable_tokens=budget.usable,
        remaining_calls=found.remaining_calls,
        need_tokens=found.need_tokens,
        options=(defer.to_json(), now.to_json()),
    )
    ledger.append_record(session_id, record)


def relieve_now_option(land: int, fixed: int, budget: Budget, growth: Growth) -> Option:
    """Relieving now, mid loop, as the deferral weighed it (a checkpoint landing at `land`)."""
    return Option(
        "checkpoint",
        land,
        land - fixed,
        stretch_cost(land, land - fixed, budget.threshold, growth.mean),
        -1,
        False,
        "not drafted: mid tool loop with room for the rest of the turn",
    )
