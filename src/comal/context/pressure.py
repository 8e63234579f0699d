"""The cost model that chooses between a projection and a derivation under pressure.

Provider prompt caches bill a request's prefix shared with the previous request at a fraction
of the price (`CACHED_RATE`) and everything after the first changed byte in full. Between
pressure events the request only grows by appending, so each call costs about
`CACHED_RATE × size + growth`; an event re-sends in full everything after its first changed
byte. A cycle that starts at size `after`, having re-sent `resent` tokens, lasts until the
request reaches the threshold again, `(threshold − after) / growth` calls later, and meanwhile
re-reads on average `(after + threshold) / 2` cached tokens per call. Its cost per token of
growth is therefore

    resent / (threshold − after) + CACHED_RATE × (after + threshold) / (2 × growth)

(the growth itself is billed the same whatever the engine does, so it is left out). The growth
per call is the session's own: the tokens its recent calls appended, on average. The engine
keeps a projection only when this cost is below a derivation's; a projection that leaves a big
prompt behind, or re-sends a long suffix, loses to a checkpoint with a short verbatim tail.

Pure arithmetic on counts from the view: no ledger access, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from comal.context.view import PartCost

CACHED_RATE = 0.1
"""Price of a cached input token relative to a new one: the common provider discount (OpenAI,
Anthropic and Gemini bill cache reads at about a tenth)."""


def growth_per_call(parts: Sequence[PartCost], since_seq: int = 0) -> float:
    """Mean tokens the session appended per model call, over the parts after `since_seq`.

    Each assistant message is one call; what it and the results and user messages after it
    added is the growth that call caused. Falls back to everything in view when no call is
    newer than `since_seq`; at least one token.
    """
    for start in (since_seq, -1):
        recent = [p for p in parts if p.seq > start and p.role != "checkpoint"]
        calls = len({p.seq for p in recent if p.role == "assistant"})
        if calls:
            return max(1.0, sum(p.tokens for p in recent) / calls)
    return 1.0


def cycle_cost(resent: float, after: float, threshold: float, growth: float) -> float:
    """Cost per token of growth of the cycle an event starts (see module docstring).

    Args:
        resent: tokens the event forces to be sent uncached.
        after: request size right after the event.
        threshold: the size at which the next event happens.
        growth: tokens appended per call.

    Returns:
        The cost per token of growth; infinite when the event does not get under the threshold.
    """
    room = threshold - after
    if room <= 0:
        return float("inf")
    return resent / room + CACHED_RATE * (after + threshold) / (2 * max(growth, 1.0))
