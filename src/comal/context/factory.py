"""`engine_for`: the one way a context engine is built, for a live session and a recorded one.

The agent (a session opening, and `reconfigure` when the model changes), `comal context` and the
commands that rebuild a recorded session's budget, and the replay's Comal policy all build their
engine here, so the settings that shape a request are derived by one rule:

- the window, where its figure came from, the model's output ceiling and whether it sees images
  arrive as plain values (`ModelWindow`: provider facts never enter the context layer);
- every other setting is the `[context]` configuration's (`ContextConfig`; the replay passes its
  own, with the margin and cache time-to-live it measures with);
- the output reserve is an explicit one when given (`--max-output-tokens`), else the
  configuration's, else the one the session last sent (`recorded_reserve`, for a recorded
  session: its report shows the budget that run really used).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from comal.config import ContextConfig
from comal.context.engine import ContextEngine
from comal.context.measure.anchors import Fingerprint
from comal.context.measure.budget import EngineSettings
from comal.context.measure.tokens import TokenCounter
from comal.context.view.build import FixedParts
from comal.ids import now_ms
from comal.ledger.store import Ledger


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """What the model offers the engine."""

    tokens: int
    """The context window."""
    source: str
    """Where the figure came from (`server`, `catalog`, `recorded`, `explicit`, …)."""
    max_output_tokens: int | None = None
    """The model's output ceiling; None: the engine's default."""
    vision: bool = False
    """Whether the model takes images."""


def engine_settings(
    window: ModelWindow,
    context: ContextConfig,
    *,
    reserve: int | None = None,
    recorded_reserve: int | None = None,
) -> EngineSettings:
    """The engine's settings for `window` under the `[context]` configuration (see module
    docstring for the output reserve's order)."""
    settings = EngineSettings(
        window_tokens=window.tokens,
        window_source=window.source,
        threshold_ratio=context.threshold_ratio,
        large_output_threshold_bytes=context.large_output_threshold_bytes,
        output_reserve_tokens=reserve or context.output_reserve_tokens or recorded_reserve,
        margin_tokens=context.margin_tokens,
        media_budget_tokens=context.media_budget_tokens,
        vision=window.vision,
        soft_limit=context.soft_limit,
        cache_ttl_s=context.cache_ttl_s,
    )
    if window.max_output_tokens is None:
        return settings
    return dataclasses.replace(settings, max_output_tokens=window.max_output_tokens)


def engine_for(
    ledger: Ledger,
    session_id: str,
    window: ModelWindow,
    fixed: FixedParts,
    *,
    model: str,
    context: ContextConfig,
    reserve: int | None = None,
    recorded_reserve: int | None = None,
    fingerprint: Fingerprint | None = None,
    counter: TokenCounter | None = None,
    clock: Callable[[], int] = now_ms,
) -> ContextEngine:
    """The context engine of `session_id` for `model`.

    Args:
        ledger: the open ledger.
        session_id: the session whose requests the engine prepares.
        window: the model's window and facts.
        fixed: what every request carries before the conversation.
        model: the model's name (its token counter, and the anchors' fingerprint).
        context: the `[context]` configuration.
        reserve: an explicit output reserve (`--max-output-tokens`), winning over the rest.
        recorded_reserve: the reserve the session last sent, when the configuration sets none.
        fingerprint: what a measured anchor is valid for; None: the model and the tools.
        counter: the token counter; None: the model's own.
        clock: milliseconds since the epoch (the replay's runs on recorded time).
    """
    settings = engine_settings(window, context, reserve=reserve, recorded_reserve=recorded_reserve)
    return ContextEngine(
        ledger,
        session_id,
        settings,
        fixed,
        model=model,
        counter=counter,
        fingerprint=fingerprint,
        clock=clock,
    )
