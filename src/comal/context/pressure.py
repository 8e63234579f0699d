"""The cost model of pressure events: where an event lands, and whether it pays for itself.

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
per call is the session's own: the tokens its recent calls appended, on average.

**Where an event lands (the payback rule).** An event that re-sends `resent` tokens pays
`(1 − CACHED_RATE) × resent` more than a call that only appends; in exchange every later call
re-reads `freed = before − after` fewer cached tokens, saving `CACHED_RATE × freed` per call,
for the `(threshold − after) / growth` calls until the next event. The event pays for itself
within the stretch it buys when

    PAYBACK × growth × resent ≤ freed × (threshold − after),   PAYBACK = (1 − r) / r = 9

Keeping more verbatim conversation keeps more facts in view, and every token kept costs only
re-reads; so the engine keeps the *largest* view that still pays for itself (`landing`), never
less room than one call of the session's largest measured growth (`peak`). For a checkpoint
`resent = after − fixed`, which makes the rule a quadratic in `after` (`checkpoint_landing`);
a projection passes when its own `resent` and `after` satisfy it (`pays_back`).
docs/context.md derives it with a worked example.

Pure arithmetic on counts from the view: no ledger access, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.view import PartCost

CACHED_RATE = 0.1
"""Price of a cached input token relative to a new one: the common provider discount (OpenAI,
Anthropic and Gemini bill cache reads at about a tenth)."""
PAYBACK = (1 - CACHED_RATE) / CACHED_RATE
"""Calls of saved cached re-reads one re-sent token must buy back: (1 − r) / r."""


@dataclass(frozen=True, slots=True)
class Growth:
    """The session's own measured growth: tokens per call, on average and at its largest."""

    mean: float
    peak: float
    calls: int

    @property
    def stretch_room(self) -> float:
        """Least room an event must leave: one more call of the largest kind seen."""
        return max(self.peak, self.mean)


def call_growths(parts: Sequence[PartCost], since_seq: int = 0) -> list[int]:
    """Tokens each model call after `since_seq` appended (its message, results and the user
    text after it), oldest first; falls back to every call in view when none is newer."""
    for start in (since_seq, -1):
        recent = [p for p in parts if p.seq > start and p.role != "checkpoint"]
        sizes: list[int] = []
        current = -1
        for part in recent:
            if part.role == "assistant" and part.seq != current:
                sizes.append(0)
                current = part.seq
            if sizes:
                sizes[-1] += part.tokens
        if sizes:
            return sizes
    return []


def measure_growth(parts: Sequence[PartCost], since_seq: int = 0, scale: float = 1.0) -> Growth:
    """The session's growth per call (see `call_growths`), scaled to calibrated tokens."""
    sizes = call_growths(parts, since_seq)
    if not sizes:
        return Growth(1.0, 1.0, 0)
    mean = max(1.0, sum(sizes) / len(sizes) * scale)
    return Growth(mean, max(1.0, max(sizes) * scale), len(sizes))


def pays_back(resent: float, before: float, after: float, threshold: float, growth: float) -> bool:
    """Whether an event (re-sending `resent`, `before` → `after`) pays for itself (see module)."""
    room = threshold - after
    freed = before - after
    if room <= 0 or freed <= 0:
        return False
    return PAYBACK * max(growth, 1.0) * resent <= freed * room


def checkpoint_landing(before: float, threshold: float, fixed: float, growth: Growth) -> int:
    """The largest request size a checkpoint may leave (fixed parts, checkpoint and tail).

    Solves `PAYBACK·g·(A − F) = (B − A)(T − A)` for its root in (F, T): A² − (B + T + k)A +
    B·T + k·F = 0 with k = PAYBACK·g; the smaller root is the largest A that pays back. Then
    leaves at least `growth.stretch_room` under the threshold.
    """
    k = PAYBACK * growth.mean
    b = before + threshold + k
    c = before * threshold + k * fixed
    disc = max(b * b - 4 * c, 0.0)
    payback = (b - math.sqrt(disc)) / 2
    return int(max(fixed, min(payback, threshold - growth.stretch_room)))


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
