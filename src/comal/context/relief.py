"""Relieving pressure: draft a checkpoint, plan a projection, keep the cheaper of the two.

Both candidates are priced with the cost model of `pressure.py` at their deepest: the
derivation as drafted (checkpoint plus verbatim tail), the projection planned down to what the
derivation would leave (or as deep as old large outputs allow). The projection is kept when its
cycle cost is not higher within the precision of the estimates it rests on — it keeps every
small result verbatim, so on a tie it keeps more in view; otherwise the checkpoint is appended
(after the CONTEXT_PRESSURE_LOOP guard). Same ledger ⇒ same drafts, same plan, same choice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from comal.context.budget import Budget
from comal.context.calibration import RECALIBRATE_SHIFT
from comal.context.checkpoint import Draft, derive
from comal.context.decisions import append_checkpoint, append_projection
from comal.context.media import (
    append_media_projection,
    media_budget,
    plan_media,
    plan_media_pressure,
    with_media,
)
from comal.context.pressure import cycle_cost, growth_per_call
from comal.context.projection import plan_projection
from comal.context.state import pressure_guard, state_with_draft
from comal.context.tokens import ScaledCounter, calibrated
from comal.context.view import Assembly, ViewState

if TYPE_CHECKING:
    from comal.context.engine import ContextEngine

TIE_PRECISION = RECALIBRATE_SHIFT
"""Relative precision of the two cycle prices: they rest on estimated sizes, trusted to the
share by which a measurement must move the calibration before the engine records it."""


def draft_checkpoint(engine: ContextEngine, state: ViewState, budget: Budget) -> tuple[Draft, int]:
    """A checkpoint draft for `state` and the estimated request size it leads to."""
    entries = engine.entries()
    previous = state.checkpoint.number if state.checkpoint else 0
    asm = engine.assemble(state)
    ratio = engine.ratio()
    draft = derive(
        previous + 1,
        entries,
        engine.conversation(),
        state,
        engine.texts(),
        ScaledCounter(engine.counter, ratio),
        budget,
        calibrated(asm.fixed_tokens, ratio, exact=engine.counter.exact),
        vision=engine.settings.vision,
    )
    trial = state_with_draft(state, draft, entries[-1].seq + 1 if entries else 1)
    after, _ = engine.estimate(engine.assemble(trial), trial)
    return draft, after


def relieve(
    engine: ContextEngine, asm: Assembly, state: ViewState, budget: Budget, estimate: int
) -> str:
    """Append a projection or a checkpoint for the view `asm` (estimated `estimate` tokens).

    Returns:
        The action taken: `projection` or `checkpoint`.

    Raises:
        ContextPressureLoopError: two automatic derivations in a row made no progress.
    """
    draft, after = draft_checkpoint(engine, state, budget)
    plan = plan_projection(asm, engine.texts(), engine.counter, budget, estimate, goal=after)
    if plan.accepted:
        scale = estimate / max(asm.total_tokens, 1)
        since = state.checkpoint.seq if state.checkpoint else 0
        growth = growth_per_call(asm.parts, since) * scale
        fixed = calibrated(asm.fixed_tokens, engine.ratio(), exact=engine.counter.exact)
        threshold = budget.threshold
        projecting = cycle_cost(plan.resent_tokens, plan.after_tokens, threshold, growth)
        # A checkpoint re-sends everything after the fixed parts.
        deriving = cycle_cost(after - fixed, after, threshold, growth)
        # Prices within the estimates' own precision are a tie, and a tie goes to the
        # projection, which keeps every small result verbatim.
        if projecting <= deriving * (1 + TIE_PRECISION):
            append_projection(engine.ledger, engine.session_id, plan)
            return "projection"
    pressure_guard(engine.entries(), budget)
    append_checkpoint(engine.ledger, engine.session_id, draft, "pressure", estimate, after, budget)
    return "checkpoint"


def relieve_media(
    engine: ContextEngine, asm: Assembly, state: ViewState, budget: Budget, estimate: int
) -> str | None:
    """Keep images within the media reserve and, under pressure, turn old images into
    references before any other relief (see `media.py`). Returns the action, or None."""
    reserve = media_budget(budget.window, engine.settings.media_budget_tokens)
    ids = plan_media(asm, reserve)
    reason = "media_reserve"
    if estimate > budget.threshold:
        pressure = plan_media_pressure(asm)
        if len(pressure) > len(ids):
            ids, reason = pressure, "media_pressure"
    if not ids:
        return None
    trial = with_media(state, ids)
    after, _ = engine.estimate(engine.assemble(trial), trial)
    append_media_projection(engine.ledger, engine.session_id, ids, reason, estimate, after)
    return reason
