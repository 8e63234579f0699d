"""Relieving pressure: stage 1 (projection) first, a derivation only when it is not enough.

One rule decides both (`pressure.py`, derived in docs/context.md): an event leaves the largest
view whose stretch — the calls until the next event — costs no more per call than the deepest
cut's, within the estimates' precision, and always room for one more call of the session's
largest measured growth. A projection of old large outputs (oldest first, one deep cut down to
that landing) is enough when its own stretch passes that test: it keeps every small result,
error and message verbatim and re-sends only what follows its first changed byte. Otherwise a
checkpoint is derived whose verbatim tail fills the view up to the landing.

Every event records why it happened (`trigger`), the options considered and, for each, the
predicted size after the event, the tokens re-sent, the cost per call of the stretch it starts
and how many results it takes out of verbatim view (`options`). Same ledger ⇒ same choice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from comal.context.measure.budget import Budget
from comal.context.measure.tokens import ScaledCounter, calibrated
from comal.context.relief.checkpoint import Draft, deepest_cut, derive
from comal.context.relief.decisions import Option, append_checkpoint, append_projection
from comal.context.relief.pressure import Growth, landing, measure_growth, stretch_cost, within_tie
from comal.context.relief.projection import ProjectionPlan, plan_projection
from comal.context.relief.recorded import pressure_guard, state_with_draft
from comal.context.view.build import Assembly, ViewState
from comal.context.view.media import (
    append_media_projection,
    media_budget,
    plan_media,
    plan_media_pressure,
    with_media,
)

if TYPE_CHECKING:
    from comal.context.engine import ContextEngine

COLD_TRIGGER = "cache_cold"
"""An event placed early because the provider's prompt cache has expired anyway."""


def session_growth(asm: Assembly, state: ViewState, estimate: int) -> Growth:
    """The session's growth per call since the checkpoint in force, in calibrated tokens."""
    scale = estimate / max(asm.total_tokens, 1)
    since = state.checkpoint.seq if state.checkpoint else 0
    return measure_growth(asm.parts, since, scale)


def _fixed(engine: ContextEngine, asm: Assembly) -> int:
    return calibrated(asm.fixed_tokens, engine.ratio(), exact=engine.counter.exact)


def deepest(engine: ContextEngine, state: ViewState, budget: Budget, asm: Assembly) -> int:
    """The deepest cut a checkpoint could make now (`checkpoint.deepest_cut`), calibrated."""
    previous = state.checkpoint.number if state.checkpoint else 0
    return deepest_cut(
        previous + 1,
        engine.entries(),
        engine.conversation(),
        state,
        engine.texts(),
        ScaledCounter(engine.counter, engine.ratio()),
        budget,
        _fixed(engine, asm),
        vision=engine.settings.vision,
    )


def landing_for(engine: ContextEngine, asm: Assembly, budget: Budget, estimate: int) -> int:
    """Where a checkpoint for this view lands (`pressure.landing`)."""
    state = engine.state()
    growth = session_growth(asm, state, estimate)
    floor = deepest(engine, state, budget, asm)
    return landing(floor, budget.threshold, _fixed(engine, asm), growth)


def draft_checkpoint(
    engine: ContextEngine, state: ViewState, budget: Budget, land: int | None = None
) -> tuple[Draft, int]:
    """A checkpoint draft for `state` landing at `land`, and the estimated size it leads to."""
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
        _fixed(engine, asm),
        landing=land,
        vision=engine.settings.vision,
    )
    trial = state_with_draft(state, draft, entries[-1].seq + 1 if entries else 1)
    after, _ = engine.estimate(engine.assemble(trial), trial)
    return draft, after


def _out_of_view(engine: ContextEngine, state: ViewState, draft: Draft) -> int:
    """Results a checkpoint takes out of verbatim view (shown in full or as a preview before)."""
    count = 0
    for block in engine.conversation():
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
            the event re-sends nothing that would have been cached).

    Returns:
        The action taken: `projection` or `checkpoint`.

    Raises:
        ContextPressureLoopError: two automatic derivations in a row made no progress.
    """
    growth = session_growth(asm, state, estimate)
    fixed = _fixed(engine, asm)
    threshold = budget.threshold
    floor = deepest(engine, state, budget, asm)
    land = landing(floor, threshold, fixed, growth)
    cold = trigger == COLD_TRIGGER
    best = stretch_cost(floor, 0 if cold else floor - fixed, threshold, growth.mean)
    plan = plan_projection(asm, engine.texts(), engine.counter, budget, estimate, goal=land)
    projection = _projection_option(plan, threshold, growth, cold, best)
    if projection.viable:
        checkpoint = Option(
            "checkpoint",
            land,
            0 if cold else land - fixed,
            stretch_cost(land, 0 if cold else land - fixed, threshold, growth.mean),
            -1,
            False,
            "not drafted: the projection is enough",
        )
        append_projection(engine.ledger, engine.session_id, plan, trigger, (projection, checkpoint))
        return "projection"
    draft, after = draft_checkpoint(engine, state, budget, land)
    resent = 0 if cold else after - fixed
    checkpoint = Option(
        "checkpoint",
        after,
        resent,
        stretch_cost(after, resent, threshold, growth.mean),
        _out_of_view(engine, state, draft),
        True,
        f"tail up to the landing {land:,} (deepest cut {floor:,})",
    )
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
    plan: ProjectionPlan, threshold: int, growth: Growth, cold: bool, best: float
) -> Option:
    """The projection as an option: enough when it leaves room for the next call and its
    stretch costs a tie with the deepest checkpoint's (`best`)."""
    resent = 0 if cold else plan.resent_tokens
    cost = stretch_cost(plan.after_tokens, resent, threshold, growth.mean)
    if not plan.result_ids:
        why, ok = plan.reason, False
    elif plan.after_tokens > threshold - growth.stretch_room:
        why, ok = "leaves no room for the next call under the threshold", False
    elif not within_tie(cost, best):
        why, ok = f"its stretch costs more than the deepest cut's ({best:,.0f} per call)", False
    else:
        why, ok = "keeps every small result and costs a tie with the deepest cut", True
    return Option("projection", plan.after_tokens, resent, cost, len(plan.result_ids), ok, why)


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
