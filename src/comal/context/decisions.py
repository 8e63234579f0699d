"""Recording pressure decisions: `projection` and `checkpoint` ledger entries.

The view is a pure function of these entries (see `view.py` and `state.py`), so what is
appended here is exactly what a resumed session, or a fresh engine, rebuilds from. Payload
fields follow `docs/ledger.md`.
"""

from __future__ import annotations

from comal.context.budget import Budget
from comal.context.checkpoint import Draft
from comal.context.projection import ProjectionPlan
from comal.context.state import Checkpoint, checkpoint_of
from comal.ledger.store import Ledger


def append_projection(ledger: Ledger, session_id: str, plan: ProjectionPlan) -> None:
    """Record a projection: the results it turns into references from now on."""
    ledger.append(
        session_id,
        "projection",
        {
            "call_ids": list(plan.call_ids),
            "result_ids": list(plan.result_ids),
            "reason": plan.reason,
            "before_tokens": plan.before_tokens,
            "after_tokens": plan.after_tokens,
            "target_tokens": plan.target_tokens,
        },
    )


def append_checkpoint(
    ledger: Ledger,
    session_id: str,
    draft: Draft,
    by: str,
    before: int,
    after: int,
    budget: Budget,
) -> Checkpoint:
    """Record a derived checkpoint; `before`/`after` are the estimated request sizes."""
    entry = ledger.append(
        session_id,
        "checkpoint",
        {
            "number": draft.number,
            "title": draft.title,
            "text": draft.text,
            "covers_through_seq": draft.covers_through_seq,
            "tail_from_seq": draft.tail_from_seq,
            "projected_result_ids": list(draft.projected),
            "before_tokens": before,
            "after_tokens": after,
            "target_tokens": budget.target,
            "threshold_tokens": budget.threshold,
            "usable_tokens": budget.usable,
            "by": by,
        },
    )
    return checkpoint_of(entry)
