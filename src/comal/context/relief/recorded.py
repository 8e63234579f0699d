"""Recorded pressure decisions, read back from the ledger: projections, checkpoints, the guard.

- `view_state(entries)`: the results shown as references (every `projection` entry's ids, and
  those a checkpoint referenced in its tail — once projected, always projected) and the latest
  checkpoint.
- `pressure_guard(entries, budget)`: CONTEXT_PRESSURE_LOOP when the last two automatic
  derivations made no progress, so a third is never attempted.

Progress. The guard exists to stop a fill/derive cycle that cannot go on (peers' endless
compaction loops), never a session that can. A derivation made progress when both hold:
- it brought the view under the automatic threshold — otherwise the fixed parts, the
  checkpoint and the minimal tail alone keep the session under pressure, and every call
  derives again without room to work;
- at least one model turn (`message.assistant`) happened since the previous checkpoint — two
  derivations with nothing in between re-derive the same history.
Landing between the target and the threshold is progress: the derivation made room and the
conversation advanced, even if pressure returns soon (small windows with big tool outputs do
this on every call). At most two derivations in a row without progress, then the error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.measure.budget import Budget
from comal.context.relief.checkpoint import Draft
from comal.context.view.build import CheckpointState, ViewState
from comal.errors import ContextPressureLoopError
from comal.ledger.entry import Entry
from comal.ledger.records import CheckpointRecord, CompactRequested, Kind, ProjectionRecord

MAX_FRUITLESS = 2
"""Consecutive automatic derivations without progress tolerated before CONTEXT_PRESSURE_LOOP:
one can be bad luck (a big result right at the boundary); two in a row are a loop."""
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


def checkpoint_of(entry: Entry) -> Checkpoint:
    """Read a `checkpoint` entry."""
    p = CheckpointRecord.from_entry(entry)
    return Checkpoint(
        entry_id=entry.id,
        seq=entry.seq,
        number=p.number or 0,
        title=p.title,
        text=p.text,
        covers_through_seq=p.covers_through_seq,
        tail_from_seq=p.tail_from_seq,
        before_tokens=p.before_tokens or 0,
        after_tokens=p.after_tokens or 0,
        by=p.by or "pressure",
        created_at=entry.created_at,
    )


def checkpoints(entries: Sequence[Entry]) -> list[Checkpoint]:
    """Every checkpoint of the session, oldest first."""
    return [checkpoint_of(e) for e in entries if e.kind == Kind.CHECKPOINT]


def view_state(entries: Sequence[Entry]) -> ViewState:
    """The projections and checkpoint in force after `entries`."""
    projected: set[str] = set()
    media: set[str] = set()
    last: tuple[Entry, frozenset[str]] | None = None
    for entry in entries:
        if entry.kind == Kind.PROJECTION:
            projection = ProjectionRecord.from_entry(entry)
            projected.update(projection.result_ids)
            media.update(projection.media_result_ids or ())
        elif entry.kind == Kind.CHECKPOINT:
            extra = frozenset(CheckpointRecord.from_entry(entry).projected_result_ids)
            projected |= extra
            last = (entry, extra)
    latest: CheckpointState | None = None
    if last is not None:
        # Only the newest checkpoint is in force: the others are not read.
        entry, extra = last
        cp = checkpoint_of(entry)
        latest = CheckpointState(
            entry.id, entry.seq, cp.number, cp.title, cp.text, cp.tail_from_seq, extra
        )
    return ViewState(frozenset(projected), latest, frozenset(media))


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
    return ViewState(projected, cp, state.media_projected)


@dataclass(frozen=True, slots=True)
class Derivation:
    """One recorded checkpoint, judged for the CONTEXT_PRESSURE_LOOP guard."""

    number: int
    automatic: bool
    after_tokens: int
    threshold_tokens: int
    turns_since_previous: int

    @property
    def progressed(self) -> bool:
        """Under the threshold, with the conversation advanced since the previous checkpoint."""
        return self.after_tokens <= self.threshold_tokens and self.turns_since_previous > 0


def derivations(entries: Sequence[Entry], budget: Budget) -> list[Derivation]:
    """Every checkpoint of the session with what the guard judges it by, oldest first.

    Entries recorded before `threshold_tokens` was stored get it from their `usable_tokens`
    and the threshold ratio in force.
    """
    out: list[Derivation] = []
    turns = 0
    for entry in entries:
        if entry.kind == Kind.MESSAGE_ASSISTANT:
            turns += 1
        elif entry.kind == Kind.CHECKPOINT:
            p = CheckpointRecord.from_entry(entry)
            usable = budget.usable if p.usable_tokens is None else p.usable_tokens
            recorded = p.threshold_tokens
            if recorded is None:
                recorded = int(usable * budget.threshold_ratio)
            # Under the threshold it was made for, or under today's when a larger window was
            # configured since: either way it left room to work.
            threshold = max(recorded, budget.threshold)
            automatic = (p.by or "pressure") not in USER_TRIGGERS
            out.append(Derivation(p.number or 0, automatic, p.after_tokens or 0, threshold, turns))
            turns = 0
    return out


def pressure_guard(entries: Sequence[Entry], budget: Budget) -> None:
    """Refuse a third automatic derivation after two in a row without progress.

    Raises:
        ContextPressureLoopError: the last two automatic derivations made no progress.
    """
    recent = [d for d in derivations(entries, budget) if d.automatic][-MAX_FRUITLESS:]
    if len(recent) < MAX_FRUITLESS or any(d.progressed for d in recent):
        return
    numbers = ", ".join(str(d.number) for d in recent)
    if all(d.turns_since_previous == 0 for d in recent):
        why = "followed each other with no model turn in between"
    else:
        worst = max(d.after_tokens for d in recent)
        why = (
            f"left the context over its threshold of {budget.threshold:,} tokens (up to"
            f" ~{worst:,}): the fixed parts, a checkpoint and the minimal tail leave no room"
        )
    raise ContextPressureLoopError(
        f"checkpoints {numbers} {why} (usable {budget.usable:,} of a {budget.window:,}-token"
        " window); stopped instead of deriving again. Everything is kept in the ledger and the"
        " session can be resumed: use a larger window, fewer tools or shorter instructions."
    )


def pending_compaction(entries: Sequence[Entry]) -> str | None:
    """Who asked for a derivation not yet done (`compact.requested`), or None."""
    requested: str | None = None
    for entry in entries:
        if entry.kind == Kind.COMPACT_REQUESTED:
            by = CompactRequested.from_entry(entry).by
            requested = "user" if by is None else by
        elif entry.kind in (Kind.CHECKPOINT, Kind.COMPACT_CANCELLED):
            requested = None
    return requested
