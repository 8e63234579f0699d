"""Built-in prices of well-known models, in US dollars per million tokens, dated.

Figures are the vendors' published list prices (standard tier, no batch discount, 5-minute
cache writes for Anthropic) as read on `AS_OF`. OpenAI bills cache writes as ordinary input,
so its cache-write price is its input price. A `[prices."model"]` table in the configuration
overrides or adds a price; a model found in neither has no price, and its cost is unknown.

Lookup normalizes the name like the window catalog, and matches a family exactly or followed
by `-` and a dated or tagged suffix (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`): a
point release (`gpt-5.4`) is priced apart by its vendor, so it does not fall back to `gpt-5`.
"""

from __future__ import annotations

from collections.abc import Mapping

from comal.providers.catalog import normalize_model_name
from comal.usage import Price

AS_OF = "2026-11-05"
_OPENAI = "OpenAI API pricing page"
_ANTHROPIC = "Anthropic pricing page (platform.claude.com/docs/en/about-claude/pricing)"


def _openai(inp: float, cached: float, out: float) -> Price:
    return Price(inp, cached, inp, out, AS_OF, _OPENAI)


def _anthropic(inp: float, out: float) -> Price:
    # Cache reads are 0.1x the input price and 5-minute cache writes 1.25x, on every model.
    return Price(inp, round(inp * 0.1, 6), round(inp * 1.25, 6), out, AS_OF, _ANTHROPIC)


_TABLE: dict[str, Price] = {
    "gpt-5": _openai(1.25, 0.125, 10.0),
    "gpt-5-codex": _openai(1.25, 0.125, 10.0),
    "gpt-5-mini": _openai(0.25, 0.025, 2.0),
    "gpt-5-nano": _openai(0.05, 0.005, 0.40),
    "gpt-4.1": _openai(2.0, 0.50, 8.0),
    "gpt-4.1-mini": _openai(0.40, 0.10, 1.60),
    "gpt-4.1-nano": _openai(0.10, 0.025, 0.40),
    "gpt-4o": _openai(2.50, 1.25, 10.0),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.60),
    "o3": _openai(2.0, 0.50, 8.0),
    "o4-mini": _openai(1.10, 0.275, 4.40),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-6": _anthropic(5.0, 25.0),
    "claude-opus-4-7": _anthropic(5.0, 25.0),
    "claude-opus-4-8": _anthropic(5.0, 25.0),
    "claude-opus-5": _anthropic(5.0, 25.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "claude-sonnet-4-6": _anthropic(3.0, 15.0),
    "claude-sonnet-5": _anthropic(2.0, 10.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.80, 4.0),
}


def price_for(model: str, configured: Mapping[str, Price] | None = None) -> Price | None:
    """The price of `model`: a configured one first (exact name), else the built-in family's."""
    if configured and model in configured:
        return configured[model]
    name = normalize_model_name(model)
    if configured:
        for key, price in configured.items():
            if normalize_model_name(key) == name:
                return price
    matches = [k for k in _TABLE if name == k or (name.startswith(k + "-") and _suffix(name, k))]
    return _TABLE[max(matches, key=len)] if matches else None


def _suffix(name: str, family: str) -> bool:
    """Whether what follows the family is a dated snapshot or tag, not another model."""
    rest = name[len(family) + 1 :]
    return (len(rest) >= 4 and rest[:4].isdigit()) or rest in ("latest", "preview")
