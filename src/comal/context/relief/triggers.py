"""When to relieve: over the threshold (now, or deferred to the turn boundary) or early.

`pressure_step(inputs)` is the whole decision after media: over the automatic threshold, an
event mid tool loop waits for the turn boundary when the rest of the turn fits (`deferral.py`),
else relief happens now (`relieve.py`) — with `trigger: turn_boundary` at the boundary a
deferral waited for. Under the threshold, an event is placed early when it costs nothing extra
or spares a dearer one later (`early_trigger`). Pure: plain values in, what to record out.
"""

from __future__ import annotations

from dataclasses import dataclass

from comal.context.relief.decisions import Option
from comal.context.relief.deferral import (
    TURN_TRIGGER,
    Deferral,
    deferral,
    loop_growth,
    relieve_now_option,
)
from comal.context.relief.inputs import ReliefInputs
from comal.context.relief.pressure import Growth
from comal.context.relief.relieve import (
    COLD_TRIGGER,
    CheckpointChoice,
    ProjectionChoice,
    landing_for,
    relieve,
    session_growth,
)


@dataclass(frozen=True, slots=True)
class Deferred:
    """The event waits for the turn boundary; `now` is the option it replaces, to record with
    the first deferral of a turn (None: this turn's deferral is already recorded)."""

    found: Deferral
    growth: Growth
    now: Option | None


def pressure_step(inputs: ReliefInputs) -> ProjectionChoice | CheckpointChoice | Deferred | None:
    """What to do about pressure on the view of `inputs` (None: nothing)."""
    blocks, budget, estimate = inputs.blocks, inputs.budget, inputs.estimate
    if estimate > budget.threshold:
        asm = inputs.asm
        growth = loop_growth(asm.parts, estimate / max(asm.total_tokens, 1))
        found = deferral(blocks, budget, estimate, growth)
        if found is not None:
            now = None
            if not inputs.deferred:
                now = relieve_now_option(
                    landing_for(inputs)[0], inputs.fixed_tokens, budget, growth
                )
            return Deferred(found, growth, now)
        # The boundary a deferral waited for; mid loop, the room ran out first.
        at_boundary = bool(blocks) and blocks[-1].role == "user"
        trigger = TURN_TRIGGER if at_boundary and inputs.deferred else "threshold"
        return relieve(inputs, trigger)
    early = early_trigger(inputs)
    return None if early is None else relieve(inputs, early)


def early_trigger(inputs: ReliefInputs) -> str | None:
    """Why pressure should be relieved before the threshold, or None.

    - `cache_cold`: idle longer than the prompt cache's time-to-live with the view already
      past where events land (the target): the whole request is re-billed anyway, so an
      event now costs nothing extra and spares a later one that would.
    - `turn_boundary`: a new turn starts (the last block is a user message) and one call
      of the session's largest growth would cross the threshold inside the tool loop.
    """
    budget, estimate, blocks = inputs.budget, inputs.estimate, inputs.blocks
    if estimate <= budget.target or not blocks:
        return None
    last_call = next((b for b in reversed(blocks) if b.role == "assistant"), None)
    if last_call is None or inputs.last_event_seq > last_call.seq:
        # One early event per model call: a retried request must not relieve again.
        return None
    idle_s = (inputs.now_ms - last_call.entry.created_at) / 1000
    if idle_s > inputs.cache_ttl_s:
        return COLD_TRIGGER
    if blocks[-1].role == "user":
        growth = session_growth(inputs)
        if estimate + growth.stretch_room > budget.threshold:
            return TURN_TRIGGER
    return None
