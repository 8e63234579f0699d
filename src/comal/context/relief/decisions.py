"""Recording pressure decisions: `projection` and `checkpoint` ledger entries.

The view is a pure function of these entries (see `view.py` and `state.py`), so what is
appended here is exactly what a resumed session, or a fresh engine, rebuilds from. Payload
fields follow `docs/ledger.md`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.measure.budget import Budget
from comal.context.relief.checkpoint import Draft
from comal.context.relief.projection import ProjectionPlan
from comal.context.relief.recorded import Checkpoint, checkpoint_of
from comal.errors import CompactNotSmallerError
from comal.ledger.records import CheckpointRecord, CompactCancelled, ProjectionRecord
from comal.ledger.store import Ledger
from comal.messages import JSONObject

AUTOMATIC_TRIGGERS = frozenset({"pressure", "threshold", "turn_boundary", "cache_cold"})


@dataclass(frozen=True, slots=True)
class Option:
    """One way to relieve pressure, as the engine predicted it before choosing."""

    action: str
    """`projection` or `checkpoint`."""
    after_tokens: int
    """Predicted request size right after the event."""
    resent_tokens: int
    """Tokens the event re-sends uncached (everything after its first changed byte)."""
    cost_per_call: float
    """Predicted mean cost per call of the stretch it starts (`pressure.stretch_cost`), in
    new-token units."""
    results_out_of_view: int
    """Results it takes out of verbatim view (they stay named by exact reference); -1 when
    the option was not worked out because an earlier one was kept."""
    viable: bool
    why: str
    working_set: tuple[int, int, int] | None = None
    """The working set this option keeps verbatim (`working_set.py`): its reach in calls, the
    reuses the reach was measured from, and how many outputs it holds; None: not worked out."""

    def to_json(self) -> JSONObject:
        """The option as recorded in the event's `options` list."""
        found: JSONObject = (
            {}
            if self.working_set is None
            else {
                "working_set": {
                    "reach_calls": self.working_set[0],
                    "reuses_measured": self.working_set[1],
                    "outputs": self.working_set[2],
                }
            }
        )
        return found | {
            "action": self.action,
            "after_tokens": self.after_tokens,
            "resent_tokens": self.resent_tokens,
            "cost_per_call": round(self.cost_per_call, 1) if self.cost_per_call < 1e18 else -1,
            "results_out_of_view": self.results_out_of_view,
            "viable": self.viable,
            "why": self.why,
        }


def _options(options: Sequence[Option]) -> tuple[JSONObject, ...]:
    return tuple(o.to_json() for o in options)


def append_projection(
    ledger: Ledger,
    session_id: str,
    plan: ProjectionPlan,
    trigger: str = "threshold",
    options: Sequence[Option] = (),
) -> None:
    """Record a projection: the results it turns into references from now on, and why."""
    record = ProjectionRecord(
        call_ids=tuple(plan.call_ids),
        result_ids=tuple(plan.result_ids),
        reason=plan.reason,
        before_tokens=plan.before_tokens,
        after_tokens=plan.after_tokens,
        target_tokens=plan.target_tokens,
        resent_tokens=plan.resent_tokens,
        trigger=trigger,
        options=_options(options),
    )
    ledger.append_record(session_id, record)


def append_checkpoint(
    ledger: Ledger,
    session_id: str,
    draft: Draft,
    by: str,
    before: int,
    after: int,
    budget: Budget,
    options: Sequence[Option] = (),
) -> Checkpoint:
    """Record a derived checkpoint; `before`/`after` are the estimated request sizes.

    `by` is who or what asked: `user`, a provider error, or a pressure trigger (`threshold`,
    `turn_boundary`, `cache_cold`); automatic ones are recorded as `by: pressure` with the
    trigger beside it, so readers of older ledgers see the same `by`."""
    record = CheckpointRecord(
        number=draft.number,
        title=draft.title,
        text=draft.text,
        covers_through_seq=draft.covers_through_seq,
        tail_from_seq=draft.tail_from_seq,
        projected_result_ids=tuple(draft.projected),
        before_tokens=before,
        after_tokens=after,
        target_tokens=budget.target,
        threshold_tokens=budget.threshold,
        usable_tokens=budget.usable,
        by="pressure" if by in AUTOMATIC_TRIGGERS else by,
        trigger=by,
        options=_options(options),
    )
    entry = ledger.append_record(session_id, record)
    return checkpoint_of(entry)


def refuse_compaction(
    ledger: Ledger, session_id: str, requested_by: str, before: int, after: int
) -> CompactNotSmallerError:
    """Record that a manual compaction was refused because it would not shrink the view.

    A checkpoint replaces the history since the previous one with its text and keeps a
    verbatim tail; when that history is already about that small, deriving would only grow
    the request (and change its prefix, re-sending it uncached). The refusal is recorded as
    `compact.cancelled` with its figures, which also drops a queued `compact.requested`.

    Returns:
        The error to raise or report (nothing else is appended).
    """
    record = CompactCancelled("engine", "not_smaller", requested_by, before, after)
    ledger.append_record(session_id, record)
    return CompactNotSmallerError(
        f"compaction refused: a checkpoint would not make the view smaller (~{before:,} →"
        f" ~{after:,} tokens), as the history it would replace is already about as small as"
        " a checkpoint and the verbatim tail it keeps. Nothing was derived; the view and"
        " everything recorded stay as they are.",
        before,
        after,
    )
