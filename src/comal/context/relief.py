"""Relieving pressure: stage 1 (projection) first, a derivation only when it is not enough.

One rule decides both (`pressure.py`, derived in docs/context.md): an event must leave the
largest view that still pays for itself before the next event, with room for at least one more
call of the session's largest measured growth. A projection of old large outputs — oldest first,
one deep cut down to the landing a checkpoint would leave — is kept when it lands under the
threshold with that room and pays for itself; it keeps every small result, error and message
verbatim. Otherwise a checkpoint is derived whose verbatim tail fills the view up to the landing.

Every event records why it happened (`trigger`), the options considered and their predicted
size after the event, tokens re-sent, cost per call of the stretch it starts and what it takes
out of verbatim view (`options`). Same ledger ⇒ same drafts, same plan, same choice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from comal.context.budget import Budget
from comal.context.checkpoint import Draft, derive
from comal.context.decisions import Option, append_checkpoint, append_projection
from comal.context.pressure import (
    Growth,
    checkpoint_landing,
    measure_growth,
    pays_back,
)
from comal.context.projection import ProjectionPlan, plan_projection
from comal.context.state import pressure_guard, state_with_draft
from comal.context.tokens import ScaledCounter, calibrated
from comal.context.view import Assembly, ViewState

if TYPE_CHECKING:
    from comal.context.engine import ContextEngine

COLD_TRIGGER = "cache_cold"
"""An event placed early because the provider's prompt cache has expired anyway."""


def session_growth(asm: Assembly, state: ViewState, estimate: int) -> Growth:
    """The session's growth per call since the checkpoint in force, in calibrated tokens."""
    scale = estimate / max(asm.total_tokens, 1)
    since = state.checkpoint.seq if state.checkpoint else 0
    return measure_growth(asm.parts, since, scale)


def landing_for(engine: ContextEngine, asm: Assembly, budget: Budget, estimate: int) -> int:
    """Where a checkpoint for this view should land (see `pressure.checkpoint_landing`)."""
    state = engine.state()
    growth = session_growth(asm, state, estimate)
    fixed = calibrated(asm.fixed_tokens, engine.ratio(), exact=engine.counter.exact)
    return checkpoint_landing(estimate, budget.threshold, fixed, growth)


def draft_checkpoint(
    engine: ContextEngine, state: ViewState, budget: Budget, landing: int | None = None
) -> tuple[Draft, int]:
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
        landing=landing,
        vision=engine.settings.vision,
    )
    trial = state_with_draft(state, draft, entries[-1].seq + 1 if entries else 1)
    after, _ = engine.estimate(engine.assemble(trial), trial)
    return draft, after


def _out_of_view(engine: ContextEngine, state: ViewState, draft: Draft) -> int:
    """Results a checkpoint takes out of verbatim view (shown in full or as a preview before)."""
    blocks = engine.conversation()
    count = 0
    for block in blocks:
        if block.seq >= draft.tail_from_seq:
            break
        if state.checkpoint is not None and block.seq < state.checkpoint.tail_from_seq:
            continue
        count += sum(1 for r in block.results if r.entry.id not in state.projected)
    return count + len(draft.projected)


def relieve(
    engine: ContextEngine,
    asm: Assembly,
    state: ViewState,
    budget: Budget,
    estimate: int,
    trigger: str = "threshold",
) -> str:
    """Append a projection or a checkpoint for the view `asm` (estimated `estimate` tokens).

    Args:
        trigger: why now — `threshold` (over the automatic threshold), `turn_boundary` (a new
            turn whose first call would cross it) or `cache_cold` (the prompt cache expired, so
            re-sending costs nothing extra).

    Returns:
        The action taken: `projection` or `checkpoint`.

    Raises:
        ContextPressureLoopError: two automatic derivations in a row made no progress.
    """
    growth = session_growth(asm, state, estimate)
    fixed = calibrated(asm.fixed_tokens, engine.ratio(), exact=engine.counter.exact)
    threshold = budget.threshold
    landing = checkpoint_landing(estimate, threshold, fixed, growth)
    plan = plan_projection(asm, engine.texts(), engine.counter, budget, estimate, goal=landing)
    # A cold cache re-bills the whole request anyway: an event re-sends nothing extra.
    cold = trigger == COLD_TRIGGER
    projection = _projection_option(plan, estimate, threshold, growth, cold, landing)
    if projection.viable:
        checkpoint = Option(
            "checkpoint", landing, 0 if cold else landing - fixed, 0.0, -1, False, "not drafted"
        )
        checkpoint = checkpoint.priced(threshold, growth.mean)
        append_projection(engine.ledger, engine.session_id, plan, trigger, (projection, checkpoint))
        return "projection"
    draft, after = draft_checkpoint(engine, state, budget, landing)
    checkpoint = Option(
        "checkpoint",
        after,
        0 if cold else after - fixed,
        0.0,
        _out_of_view(engine, state, draft),
        True,
        "pays back" if after <= threshold else "the smallest checkpoint",
    ).priced(threshold, growth.mean)
    pressure_guard(engine.entries(), budget)
    append_checkpoint(
        engine.ledger,
        engine.session_id,
        draft,
        trigger,
        estimate,
        after,
        budget,
        options=(projection, checkpoint),
    )
    return "checkpoint"


def _projection_option(
    plan: ProjectionPlan, estimate: int, threshold: int, growth: Growth, cold: bool, landing: int
) -> Option:
    """The projection as an option: enough when it lands with room for the next call and either
    pays for itself or lands as deep as a checkpoint would (keeping every small result)."""
    resent = 0 if cold else plan.resent_tokens
    if not plan.result_ids:
        why, ok = plan.reason, False
    elif plan.after_tokens > threshold - growth.stretch_room:
        why, ok = "leaves no room for the next call under the threshold", False
    elif plan.after_tokens > landing and not pays_back(
        resent, estimate, plan.after_tokens, threshold, growth.mean
    ):
        why, ok = "re-sends more than it saves before the next event", False
    else:
        why, ok = "lands under the threshold and pays back", True
    return Option(
        "projection", plan.after_tokens, resent, 0.0, len(plan.result_ids), ok, why
    ).priced(threshold, growth.mean)
