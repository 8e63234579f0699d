"""Normalized token usage, one shape for every wire.

`None` always means *unknown*, never zero: a provider that did not report cache reads has an
unknown cache read, not an observed 0. `total_input` is only known when `new_input` is.
"""

from __future__ import annotations

from dataclasses import dataclass

from comal.messages import JSONObject


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call.

    `new_input` excludes cache reads and writes; `output` includes reasoning.
    """

    new_input: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    output: int | None = None
    reasoning: int | None = None

    @property
    def total_input(self) -> int | None:
        """All input tokens of the request (new + cache read + cache write), if known."""
        if self.new_input is None:
            return None
        return self.new_input + (self.cache_read or 0) + (self.cache_write or 0)

    def to_json(self) -> JSONObject:
        """JSON form for the ledger (nulls kept: unknown stays unknown)."""
        return {
            "new_input": self.new_input,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "output": self.output,
            "reasoning": self.reasoning,
        }

    @classmethod
    def from_json(cls, obj: JSONObject) -> Usage:
        """Inverse of `to_json`."""

        def pick(key: str) -> int | None:
            value = obj.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return cls(
            pick("new_input"),
            pick("cache_read"),
            pick("cache_write"),
            pick("output"),
            pick("reasoning"),
        )

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            if a is None and b is None:
                return None
            return (a or 0) + (b or 0)

        return Usage(
            add(self.new_input, other.new_input),
            add(self.cache_read, other.cache_read),
            add(self.cache_write, other.cache_write),
            add(self.output, other.output),
            add(self.reasoning, other.reasoning),
        )


PROMPT_CACHE_TTL_S = 300.0
"""How long a provider keeps a prompt prefix cached after its last use: five minutes, the
default of Anthropic's and OpenAI's caches. The engine's `[context] cache_ttl_s` and the replay's
`--cache-ttl` default to it."""


@dataclass(frozen=True, slots=True)
class Price:
    """What a model costs, in US dollars per million tokens of each kind, as of a date."""

    input: float
    """New (uncached) input."""
    cached_input: float
    """Input read from the provider's cache."""
    cache_write: float
    """Input written to the cache (Anthropic bills it apart; OpenAI bills it as input)."""
    output: float
    """Output, reasoning included."""
    as_of: str
    """The date the figures were read (`YYYY-MM-DD`), or `config` for a configured price."""
    source: str = ""
