"""The cost model of pressure events and the one rule that places them: the landing.

Provider prompt caches bill a request's prefix shared with the previous request at a fraction
`r = CACHED_RATE` of the price and everything after the first changed byte in full. Between
pressure events the request only grows by appending, so a call costs `r × size + g` (g: the
tokens it appends); an event re-sends in full everything after its first changed byte. An event
that lands at size `A`, re-sending `S` tokens, starts a stretch of `n = (T − A) / g` calls before
the request reaches the threshold `T` again, re-reading on average `(A + T) / 2` cached tokens
per call. Its cost per call, averaged over the stretch, is therefore

    c(A, S) = S × g / (T − A) + r × (A + T) / 2 + g                              (1)

For a checkpoint `S = A − F` (F: the fixed parts, which stay cached): `c` rises with `A`, so
cost alone says "cut as deep as possible", and facts say "keep as much as possible". The rule
(docs/context.md derives it with a worked example): **keep the largest view whose stretch costs
no more than the deepest cut's, within the precision of the estimates** (`TIE_PRECISION`,
5 %): prices inside it are a tie, and a tie goes to the view that keeps more verbatim.

    landing L = max { A ≤ T − room : c(A, A − F) ≤ (1 + ε) × c(A₀, A₀ − F) }

`A₀` is the deepest cut (fixed parts, the checkpoint, the newest block); `room` is one call of
the session's largest measured growth. Growth is the session's own, measured since the last
checkpoint: tokens per call and the largest call. The same test decides stage 1: a projection
is enough when its own stretch, `c(A_p, S_p)` with its smaller re-send, is within the same
tie of the deepest cut, and leaves that room under the threshold.

Pure arithmetic on counts from the view: no ledger access, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.measure.calibration import RECALIBRATE_SHIFT
from comal.context.view.build import PartCost

CACHED_RATE = 0.1
"""Price of a cached input token relative to a new one: the common provider discount (OpenAI,
Anthropic and Gemini bill cache reads at about a tenth)."""
TIE_PRECISION = RECALIBRATE_SHIFT
"""Relative precision of the prices: they rest on estimated sizes, trusted to the share by
which a measurement must move the calibration before the engine records it."""


@dataclass(frozen=True, slots=True)
class Growth:
    """The session's own measured growth: tokens per call, on average and at its largest."""

    mean: float
    peak: float
    calls: int

    @property
    def stretch_room(self) -> float:
        """Least room an event must leave under the threshold: one call of the largest kind."""
        return max(self.peak, self.mean)


def call_growths(parts: Sequence[PartCost], since_seq: int = 0) -> list[int]:
    """Tokens each model call after `since_seq` appended (its message, results and the user
    text after it), oldest first; falls back to every call in view when none is newer."""
    for start in (since_seq, -1):
        recent = [p for p in parts if p.seq > start and p.role != "checkpoint"]
        sizes: list[int] = []
        current = -1
        for part in recent:
            if part.role == "assistant" and part.seq != current:
                sizes.append(0)
                current = part.seq
            if sizes:
                sizes[-1] += part.tokens
        if sizes:
            return sizes
    return []


def measure_growth(parts: Sequence[PartCost], since_seq: int = 0, scale: float = 1.0) -> Growth:
    """The session's growth per call (see `call_growths`), scaled to calibrated tokens."""
    sizes = call_growths(parts, since_seq)
    if not sizes:
        return Growth(1.0, 1.0, 0)
    mean = max(1.0, sum(sizes) / len(sizes) * scale)
    return Growth(mean, max(1.0, max(sizes) * scale), len(sizes))


def stretch_cost(after: float, resent: float, threshold: float, growth: float) -> float:
    """Mean cost per call of the stretch an event starts, in new-token units (equation 1);
    infinite when the event does not get under the threshold."""
    room = threshold - after
    if room <= 0:
        return float("inf")
    g = max(growth, 1.0)
    return resent * g / room + CACHED_RATE * (after + threshold) / 2 + g


def within_tie(cost: float, deepest: float) -> bool:
    """Whether `cost` is a tie with the deepest cut's (see module docstring)."""
    return cost <= (1 + TIE_PRECISION) * deepest


def landing(floor: float, threshold: float, fixed: float, growth: Growth) -> int:
    """The largest size a checkpoint may leave (the rule of the module docstring).

    Args:
        floor: the deepest cut, `A₀`: fixed parts, the checkpoint and the newest block.
        threshold: the automatic threshold `T`.
        fixed: the fixed parts `F` (cached across the event).
        growth: the session's measured growth.
    """
    top = threshold - growth.stretch_room
    if top <= floor:
        # Even the deepest normal cut leaves no room: aim under it (smaller checkpoint forms).
        return int(max(top, fixed))
    deepest = stretch_cost(floor, floor - fixed, threshold, growth.mean)

    def fits(size: float) -> bool:
        return within_tie(stretch_cost(size, size - fixed, threshold, growth.mean), deepest)

    if fits(top):
        return int(top)
    lo, hi = floor, top
    # c rises with A, so the largest landing that fits is found by bisection (to a token).
    while hi - lo > 1:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return int(lo)


def warm_call_cost(threshold: float, growth: float) -> float:
    """What one call costs sitting at the threshold with a warm cache, `r × T + g`: the most
    an event's stretch may cost per call (`cost_bound`)."""
    return CACHED_RATE * threshold + max(growth, 1.0)


def cost_bound(floor: float, threshold: float, fixed: float, growth: Growth) -> int:
    """The largest landing whose stretch costs no more per call than a warm call at the
    threshold (docs/context.md, "Facts first, cost bounded").

    An event exists to make the calls after it cheaper than calls at the threshold would be;
    one whose re-send, spread over its stretch, makes the mean call dearer than that buys
    nothing with its cut. Below this bound every extra token kept pays for itself in the one
    currency the engine can price — the same request, still cheaper than before the event —
    so the view up to it goes to the facts the next calls are likely to use (`working_set`).
    With `S = A − F`, `c(A, S) ≤ r·T + g` reads `(A − F)·g ≤ r·(T − A)² / 2`.
    """
    top = threshold - growth.stretch_room
    if top <= floor:
        return int(max(min(top, floor), fixed))
    limit = warm_call_cost(threshold, growth.mean)

    def fits(size: float) -> bool:
        return stretch_cost(size, size - fixed, threshold, growth.mean) <= limit

    if fits(top):
        return int(top)
    if not fits(floor):
        return int(floor)
    lo, hi = floor, top
    while hi - lo > 1:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return int(lo)
