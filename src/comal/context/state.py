"""Recorded pressure decisions, read back from the ledger: projections, checkpoints, the guard.

- `view_state(entries)`: the results shown as references (every `projection` entry's ids, and
  those a checkpoint referenced in its tail — once projected, always projected) and the latest
  checkpoint.
- `pressure_guard(entries, budget)`: CONTEXT_PRESSURE_LOOP when the last two automatic
  derivations made no progress (did not land under their target, or freed under 15 % of the
  usable room), so a third is never attempted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.budget import Budget
from comal.context.checkpoint import Draft
from comal.context.view import CheckpointState, ViewState
from comal.errors import ContextPressureLoopError
from comal.ledger.entry import Entry
from comal.messages import JSONValue

MIN_DERIVATION_SAVING = 0.15
"""A derivation that frees less than this share of the usable room made no progress."""
MAX_FRUITLESS = 2
USER_TRIGGERS = frozenset({"user"})


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A recorded checkpoint (`checkpoint` entry)."""

    entry_id: str
    seq: int
    number: int
    title: str
    text: str
    covers_through_seq: int
    tail_from_seq: int
    before_tokens: int
    after_tokens: int
    by: str
    created_at: int


def _int(value: JSONValue, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _ids(value: JSONValue) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def checkpoint_of(entry: Entry) -> Checkpoint:
    """Read a `checkpoint` entry."""
    p = entry.payload
    return Checkpoint(
        entry_id=entry.id,
        seq=entry.seq,
        number=_int(p.get("number")),
        title=str(p.get("title") or ""),
        text=str(p.get("text") or ""),
        covers_through_seq=_int(p.get("covers_through_seq")),
        tail_from_seq=_int(p.get("tail_from_seq")),
        before_tokens=_int(p.get("before_tokens")),
        after_tokens=_int(p.get("after_tokens")),
        by=str(p.get("by") or "pressure"),
        created_at=entry.created_at,
    )


def checkpoints(entries: Sequence[Entry]) -> list[Checkpoint]:
    """Every checkpoint of the session, oldest first."""
    return [checkpoint_of(e) for e in entries if e.kind == "checkpoint"]


def view_state(entries: Sequence[Entry]) -> ViewState:
    """The projections and checkpoint in force after `entries`."""
    projected: set[str] = set()
    latest: CheckpointState | None = None
    for entry in entries:
        if entry.kind == "projection":
            projected.update(_ids(entry.payload.get("result_ids")))
        elif entry.kind == "checkpoint":
            extra = frozenset(_ids(entry.payload.get("projected_result_ids")))
            projected |= extra
            cp = checkpoint_of(entry)
            latest = CheckpointState(
                entry.id, entry.seq, cp.number, cp.title, cp.text, cp.tail_from_seq, extra
            )
    return ViewState(frozenset(projected), latest)


def state_with_draft(state: ViewState, draft: Draft, seq: int) -> ViewState:
    """The state a draft checkpoint would create if appended at `seq`."""
    projected = state.projected | frozenset(draft.projected)
    cp = CheckpointState(
        "pending",
        seq,
        draft.number,
        draft.title,
        draft.text,
        draft.tail_from_seq,
        frozenset(draft.projected),
    )
    return ViewState(projected, cp)


def made_progress(entry: Entry, usable_default: int) -> bool:
    """Whether a recorded derivation landed under its target and freed enough."""
    p = entry.payload
    usable = _int(p.get("usable_tokens"), usable_default)
    before = _int(p.get("before_tokens"))
    after = _int(p.get("after_tokens"))
    target = _int(p.get("target_tokens"), usable)
    return after <= target and before - after >= MIN_DERIVATION_SAVING * usable


def pressure_guard(entries: Sequence[Entry], budget: Budget) -> None:
    """Refuse a third automatic derivation after two without progress.

    Raises:
        ContextPressureLoopError: the last two automatic derivations made no progress.
    """
    automatic = [
        e
        for e in entries
        if e.kind == "checkpoint" and str(e.payload.get("by") or "pressure") not in USER_TRIGGERS
    ]
    recent = automatic[-MAX_FRUITLESS:]
    if len(recent) < MAX_FRUITLESS or any(made_progress(e, budget.usable) for e in recent):
        return
    numbers = ", ".join(str(_int(e.payload.get("number"))) for e in recent)
    raise ContextPressureLoopError(
        f"checkpoints {numbers} did not bring the context under its target of"
        f" {budget.target:,} tokens (usable {budget.usable:,} of a {budget.window:,}-token"
        " window); stopped instead of deriving again. Everything is kept in the ledger and the"
        " session can be resumed: use a larger window, fewer tools or shorter instructions."
    )


def pending_compaction(entries: Sequence[Entry]) -> str | None:
    """Who asked for a derivation not yet done (`compact.requested`), or None."""
    requested: str | None = None
    for entry in entries:
        if entry.kind == "compact.requested":
            by = entry.payload.get("by")
            requested = by if isinstance(by, str) else "user"
        elif entry.kind == "checkpoint":
            requested = None
    return requested
