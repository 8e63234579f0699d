"""Relieving pressure: stage 1 (projection) first, a derivation only when it is not enough.

One rule decides both (`pressure.py`, derived in docs/context.md): an event leaves at least the
largest view whose stretch — the calls until the next event — costs no more per call than the
deepest cut's, within the estimates' precision, raised to keep the working set verbatim
(`working_set.py`) as long as the stretch costs no more per call than a warm call at the
threshold (`pressure.cost_bound`), and always room for one more call of the session's largest
measured growth. A projection of old large outputs (oldest first, one deep cut down to
that landing) is enough when its own stretch passes that test: it keeps every small result,
error and message verbatim and re-sends only what follows its first changed byte. Otherwise a
checkpoint is derived whose verbatim tail fills the view up to the landing.

The decision is pure: `relieve(inputs, trigger)` reads only the plain values of `ReliefInputs`
(`inputs.py`) and returns what to record (`ProjectionChoice` or `CheckpointChoice`); the engine
appends it. Same ledger ⇒ same inputs ⇒ same choice.

Every event records why it happened (`trigger`), the options considered and, for each, the
predicted size after the event, the tokens re-sent, the cost per call of the stretch it starts
and how many results it takes out of verbatim view (`options`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from comal.context.relief.checkpoint import Draft, deepest_cut, derive, tail_tokens_by_block
from comal.context.relief.decisions import Option
from comal.context.relief.inputs import ReliefInputs
from comal.context.relief.pressure import (
    Growth,
    cost_bound,
    landing,
    measure_growth,
    stretch_cost,
    within_tie,
)
from comal.context.relief.projection import ProjectionPlan, plan_projection
from comal.context.relief.recorded import USER_TRIGGERS, pressure_guard, state_with_draft
from comal.context.relief.working_set import WorkingSet, working_set
from comal.context.view.media import plan_media, plan_media_pressure, with_media

COLD_TRIGGER = "cache_cold"
"""An event placed early because the provider's prompt cache has expired anyway."""


@dataclass(frozen=True, slots=True)
class ProjectionChoice:
    """Project old large outputs (`plan`), with the options weighed."""

    plan: ProjectionPlan
    trigger: str
    options: tuple[Option, ...]


@dataclass(frozen=True, slots=True)
class CheckpointChoice:
    """Derive checkpoint `draft`: the request goes from `before` to `after` tokens."""

    draft: Draft
    trigger: str
    before: int
    after: int
    options: tuple[Option, ...] = ()


@dataclass(frozen=True, slots=True)
class CompactionRefusal:
    """A person's compaction that would not make the view smaller (`before` → `after`)."""

    by: str
    before: int
    after: int


@dataclass(frozen=True, slots=True)
class MediaChoice:
    """Show the images of `ids` by reference (`reason`: reserve or pressure)."""

    ids: tuple[str, ...]
    reason: str
    before: int
    after: int


def session_growth(inputs: ReliefInputs) -> Growth:
    """The session's growth per call since the checkpoint in force, in calibrated tokens."""
    asm, state = inputs.asm, inputs.state
    scale = inputs.estimate / max(asm.total_tokens, 1)
    since = state.checkpoint.seq if state.checkpoint else 0
    return measure_growth(asm.parts, since, scale)


def deepest(inputs: ReliefInputs) -> int:
    """The deepest cut a checkpoint could make now (`checkpoint.deepest_cut`), calibrated."""
    return deepest_cut(
        inputs.previous_number + 1,
        inputs.entries,
        inputs.blocks,
        inputs.state,
        inputs.texts,
        inputs.scaled_counter(),
        inputs.budget,
        inputs.fixed_tokens,
        vision=inputs.vision,
        index=inputs.index,
    )


def landing_for(inputs: ReliefInputs) -> tuple[int, WorkingSet]:
    """Where a checkpoint for this view lands, and the working set it keeps."""
    return facts_first_landing(inputs, deepest(inputs))


def facts_first_landing(inputs: ReliefInputs, floor: int) -> tuple[int, WorkingSet]:
    """Where a checkpoint lands, and the working set it keeps (docs/context.md, "Facts first,
    cost bounded"): high enough to keep the working set verbatim, never above the cost bound
    (`pressure.cost_bound`), and never below the cheapest tie (`pressure.landing`).

    The working set is the session's measured reach; when its newest calls alone would land
    above the bound, its oldest calls leave it one by one until they fit. The last reads of
    the files those calls work on join it when the landing with them still fits the bound.
    The landing never passes the bound: what the working set cannot keep then is what the
    deepest cut keeps (its newest block).
    """
    growth = session_growth(inputs)
    threshold, fixed = inputs.budget.threshold, inputs.fixed_tokens
    tie = landing(floor, threshold, fixed, growth)
    bound = cost_bound(floor, threshold, fixed, growth)
    ws = working_set(inputs.blocks, inputs.texts)
    oldest = ws.pinned_from_seq  # never newer than the recent calls' oldest block
    if oldest is None:
        return tie, ws
    sizes = tail_tokens_by_block(
        inputs.blocks,
        oldest,
        inputs.state,
        inputs.texts,
        inputs.scaled_counter(),
        inputs.budget,
        vision=inputs.vision,
        keep=ws.result_ids,
    )
    # The landing with the tail starting at each block (the newest block is in `floor`).
    landings: dict[int, int] = {}
    total = floor
    for seq, tokens in sizes:
        total += tokens
        landings[seq] = total

    def at(seq: int) -> int:
        return landings.get(seq, floor)

    if at(oldest) <= bound:
        return max(tie, at(oldest)), ws
    calls = [b.seq for b in reversed(inputs.blocks) if b.role == "assistant"][: ws.reach]
    reach = len(calls)
    while reach > 1 and at(calls[reach - 1]) > bound:
        reach -= 1
    kept = working_set(inputs.blocks, inputs.texts, reach, files=False)
    recent = at(calls[reach - 1]) if calls else floor
    return max(tie, min(recent, bound)), kept


def draft_checkpoint(
    inputs: ReliefInputs, land: int | None = None, keep: frozenset[str] = frozenset()
) -> tuple[Draft, int]:
    """A checkpoint draft landing at `land`, and the estimated size it leads to."""
    entries, state = inputs.entries, inputs.state
    draft = derive(
        inputs.previous_number + 1,
        entries,
        inputs.blocks,
        state,
        inputs.texts,
        inputs.scaled_counter(),
        inputs.budget,
        inputs.fixed_tokens,
        landing=land,
        vision=inputs.vision,
        index=inputs.index,
        keep=keep,
    )
    trial = state_with_draft(state, draft, entries[-1].seq + 1 if entries else 1)
    return draft, inputs.estimate_of(trial)


def compaction(
    inputs: ReliefInputs, by: str, *, queued: bool = False
) -> CheckpointChoice | CompactionRefusal:
    """A derivation asked for by `by` (a person, or a reason such as a full window).

    A person's request must make the view smaller, or it is refused with its figures. Asked
    now by anyone else, it is refused after two automatic derivations without progress; a
    queued request (`compact.requested`, derived at the turn boundary) is not.

    Raises:
        ContextPressureLoopError: an automatic derivation after two without progress.
    """
    if not queued and by not in USER_TRIGGERS:
        pressure_guard(inputs.entries, inputs.budget)
    before = inputs.estimate
    land, ws = landing_for(inputs)
    draft, after = draft_checkpoint(inputs, land, ws.result_ids)
    if by in USER_TRIGGERS and after >= before:
        return CompactionRefusal(by, before, after)
    return CheckpointChoice(draft, by, before, after)


def _out_of_view(inputs: ReliefInputs, draft: Draft) -> int:
    """Results a checkpoint takes out of verbatim view (shown in full or as a preview before)."""
    state = inputs.state
    count = 0
    for block in inputs.blocks:
        if block.seq >= draft.tail_from_seq:
            break
        if state.checkpoint is not None and block.seq < state.checkpoint.tail_from_seq:
            continue
        count += sum(1 for r in block.results if r.entry.id not in state.projected)
    return count + len(draft.projected)


def relieve(
    inputs: ReliefInputs, trigger: str = "threshold"
) -> ProjectionChoice | CheckpointChoice:
    """A projection or a checkpoint for the view of `inputs`.

    Args:
        trigger: why now — `threshold` (over the automatic threshold), `turn_boundary` (a new
            turn whose first call would cross it) or `cache_cold` (the prompt cache expired, so
            the event re-sends nothing that would have been cached).

    Raises:
        ContextPressureLoopError: two automatic derivations in a row made no progress.
    """
    budget, estimate = inputs.budget, inputs.estimate
    growth = session_growth(inputs)
    fixed = inputs.fixed_tokens
    threshold = budget.threshold
    floor = deepest(inputs)
    land, ws = facts_first_landing(inputs, floor)
    cold = trigger == COLD_TRIGGER
    # The projection competes with the checkpoint this event would derive: at its landing,
    # or the deepest cut's tie when that costs more.
    best = max(
        stretch_cost(floor, 0 if cold else floor - fixed, threshold, growth.mean),
        stretch_cost(land, 0 if cold else land - fixed, threshold, growth.mean),
    )
    plan = plan_projection(
        inputs.asm, inputs.texts, inputs.counter, budget, estimate, goal=land, keep=ws.result_ids
    )
    projection = _projection_option(plan, threshold, growth, cold, best)
    kept = (ws.reach, ws.reuses, len(ws.result_ids))
    projection = replace(projection, working_set=kept)
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
        return ProjectionChoice(plan, trigger, (projection, checkpoint))
    draft, after = draft_checkpoint(inputs, land, ws.result_ids)
    resent = 0 if cold else after - fixed
    checkpoint = Option(
        "checkpoint",
        after,
        resent,
        stretch_cost(after, resent, threshold, growth.mean),
        _out_of_view(inputs, draft),
        True,
        f"tail up to the landing {land:,} (deepest cut {floor:,})",
        kept,
    )
    pressure_guard(inputs.entries, budget)
    return CheckpointChoice(draft, trigger, estimate, after, (projection, checkpoint))


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


def relieve_media(inputs: ReliefInputs) -> MediaChoice | None:
    """Keep images within the media reserve and, under pressure, turn old images into
    references before any other relief (see `media.py`); None when nothing changes."""
    ids = plan_media(inputs.asm, inputs.media_budget_tokens)
    reason = "media_reserve"
    if inputs.estimate > inputs.budget.threshold:
        pressure = plan_media_pressure(inputs.asm)
        if len(pressure) > len(ids):
            ids, reason = pressure, "media_pressure"
    if not ids:
        return None
    after = inputs.estimate_of(with_media(inputs.state, ids))
    return MediaChoice(tuple(ids), reason, inputs.estimate, after)
