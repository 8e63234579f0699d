"""The budget: window, output reserve, margin, usable room, threshold and the pressure target.

    usable    = window − output reserve − margin
    threshold = threshold_ratio × window − output reserve − margin
                                                   (automatic pressure, default 90 %)
                capped by `[context] soft_limit` when one is set (a quality budget)
    target    = threshold − usable / 5             (where a pressure event lands: hysteresis)

The threshold is a share of the window itself, the way the budget's rows are shown: the output
reserve and the margin are part of the window's use (`/context` shows them as the buffer row),
so pressure starts when everything, buffer included, reaches 90 % of the window. It never falls
below half the usable room, so a window that a large reserve nearly fills still leaves the
conversation room to grow between events.

The output reserve is sized from the outputs the session actually produced: twice their 95th
percentile, never below `RESERVE_FLOOR` (256 tokens), 4,096 before any output is recorded, and
at least twice a reserve an OUTPUT_LENGTH proved too small. It never exceeds the smallest of the
model's maximum output, the configured `[context] output_reserve_tokens` (a maximum, not a fixed
size) and half of what the window leaves after the fixed parts and the margin: a small local
window keeps room for the conversation instead of spending it all on a reply it rarely needs.
Everything comes from ledger entries and the fixed parts, so a resumed session computes the
same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from comal.config import DEFAULT_THRESHOLD_RATIO
from comal.errors import ContextOverheadError, OutputLengthError
from comal.ledger.entry import Entry
from comal.ledger.records import AssistantMessage, Kind, ResponseDiscardedRecord
from comal.ledger.records import fields as f
from comal.usage import PROMPT_CACHE_TTL_S

RESERVE_FLOOR = 256
"""The least a reply is given while the window leaves room for it."""
RESERVE_START = 4_096
"""The reserve before the session has recorded any output."""
TARGET_DEPTH = 0.20
"""How far below the threshold a pressure event lands, as a share of the usable room."""


class FixedParts(Protocol):
    """The fixed parts of a built request, token by token (the view's `Assembly` is one): what
    the CONTEXT_OVERHEAD message itemizes. A protocol, so the budget never imports the view."""

    @property
    def system_tokens(self) -> int: ...
    @property
    def instructions_tokens(self) -> int: ...
    @property
    def tools_tokens(self) -> int: ...
    @property
    def plugin_tokens(self) -> int: ...
    @property
    def mcp_tokens(self) -> int: ...


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Budget settings for one session and model."""

    window_tokens: int
    window_source: str = "fallback"
    max_output_tokens: int = 32_000
    threshold_ratio: float = DEFAULT_THRESHOLD_RATIO
    large_output_threshold_bytes: int | None = None
    """Outputs up to this size always enter whole; None: the seed's 20 KiB, and larger ones
    too while they fit the window's share (`view/entry.py`). Set, it is the ceiling as given."""
    output_reserve_tokens: int | None = None
    """The largest reserve ever sent (`[context] output_reserve_tokens`); None: no maximum
    beyond the model's and the window's."""
    margin_tokens: int | None = None
    """Safety margin; None is 1/16 of the window (256 … 16,384)."""
    vision: bool = False
    """Whether the model takes images; without it media become text stand-ins."""
    soft_limit: int | float | None = None
    """Quality budget: the most input tokens a request should carry (an int), or a share of
    the window (a float in (0, 1]); None keeps the automatic threshold alone."""
    cache_ttl_s: float = PROMPT_CACHE_TTL_S
    """How long the provider keeps a prompt cache warm; idle longer, an event re-bills nothing
    extra, so pressure relief may come early."""
    media_budget_tokens: int | None = None
    """The media reserve; None is the default of `media.py`."""


@dataclass(frozen=True, slots=True)
class Budget:
    """Token budget of one request."""

    window: int
    output_reserve: int
    margin: int
    threshold_ratio: float
    soft_limit: int | None = None
    """Most input tokens per request the user wants (`[context] soft_limit`), or None."""

    @property
    def usable(self) -> int:
        """Room for the whole input: fixed parts and conversation."""
        return self.window - self.output_reserve - self.margin

    @property
    def threshold(self) -> int:
        """Input size above which pressure is relieved automatically (see module docstring)."""
        share = int(self.window * self.threshold_ratio) - self.output_reserve - self.margin
        automatic = max(share, self.usable // 2)
        return automatic if self.soft_limit is None else min(automatic, self.soft_limit)

    @property
    def target(self) -> int:
        """Input size a pressure event aims for (well under the threshold)."""
        return max(self.threshold - int(self.usable * TARGET_DEPTH), self.threshold // 2)


def soft_limit_tokens(limit: int | float | None, window: int) -> int | None:
    """A soft limit in tokens: an int as given, a share (float) of the window, or None."""
    if limit is None:
        return None
    if isinstance(limit, float):
        return max(1, int(window * limit))
    return max(1, limit)


def default_margin(window: int) -> int:
    """Safety margin for estimate error: 1/16 of the window, between 256 and 16,384."""
    return min(max(window // 16, 256), 16_384)


def percentile(values: Sequence[int], share: float) -> int:
    """Nearest-rank percentile (deterministic, no interpolation)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def session_outputs(entries: Sequence[Entry]) -> list[int]:
    """Output token counts the session's model calls reported (unknown ones left out)."""
    out = []
    for entry in entries:
        if entry.kind != Kind.MESSAGE_ASSISTANT:
            continue
        usage = AssistantMessage.from_entry(entry).usage
        value = None if usage is None else f.int_or_none(usage, "output")
        if value is not None:
            out.append(value)
    return out


def truncated_reserves(entries: Sequence[Entry]) -> list[int]:
    """Output reserves that proved too small (`response.discarded` for OUTPUT_LENGTH)."""
    out = []
    for entry in entries:
        if entry.kind != Kind.RESPONSE_DISCARDED:
            continue
        discarded = ResponseDiscardedRecord.from_entry(entry)
        if discarded.reason == "OUTPUT_LENGTH" and discarded.output_reserve is not None:
            out.append(discarded.output_reserve)
    return out


def reserve_room(window: int, fixed_tokens: int, margin: int) -> int:
    """The most the reserve may take: half of what the window leaves after fixed parts and
    margin (the other half is the conversation's), 0 when nothing is left."""
    return max(window - fixed_tokens - margin, 0) // 2


def discarded_preview(entries: Sequence[Entry], chars: int = 300) -> str:
    """`: "…"` with the start of the latest discarded reply's text, or "" when it had none."""
    for entry in reversed(entries):
        if entry.kind != Kind.RESPONSE_DISCARDED:
            continue
        message = ResponseDiscardedRecord.from_entry(entry).message
        parts = message.get("parts") if message is not None else None
        texts = [
            str(p.get("text"))
            for p in (parts if isinstance(parts, list) else [])
            if isinstance(p, dict) and p.get("type") == "text"
        ]
        text = " ".join("".join(texts).split())
        if not text:
            return ""
        return f": {text[:chars]!r}" + (" …" if len(text) > chars else "")
    return ""


def size_output_reserve(
    outputs: Sequence[int],
    truncated: Sequence[int],
    *,
    max_output: int,
    configured: int | None = None,
    room: int | None = None,
) -> int:
    """The output reserve for the next request (see the module docstring).

    Args:
        outputs: output tokens of the session's finished responses.
        truncated: reserves that a response overflowed (each at least doubles the next one).
        max_output: the model's maximum output tokens.
        configured: `[context] output_reserve_tokens`, a maximum.
        room: what the window leaves for the reserve (`reserve_room`).
    """
    caps = [max_output] + [c for c in (configured, room) if c is not None]
    cap = max(1, min(caps))
    base = max(2 * percentile(outputs, 0.95), RESERVE_FLOOR) if outputs else RESERVE_START
    for reserve in truncated:
        base = max(base, 2 * reserve)
    return min(base, cap)


def overhead_message(
    asm: FixedParts, budget: Budget, fixed: int, reserve: int | None = None
) -> str:
    """The CONTEXT_OVERHEAD message: the budget, row by row, the total the rule needs (the fixed
    parts, room for a reply twice — one for the reply, as much again for the conversation —
    and the margin) against the window, and what to do."""
    reply = budget.output_reserve if reserve is None else reserve
    needed = fixed + 2 * reply + budget.margin
    return (
        f"the fixed parts do not fit the {budget.window:,}-token window: system"
        f" {asm.system_tokens:,}, custom instructions {asm.instructions_tokens:,}, native"
        f" tools {asm.tools_tokens:,}, plugin tools {asm.plugin_tokens:,}, MCP tools"
        f" {asm.mcp_tokens:,} (~{fixed:,} in all), room for a reply {reply:,} and as much"
        f" again for the conversation, margin {budget.margin:,}: ~{needed:,} needed, more"
        f" than the {budget.window:,} there are. Nothing was sent. Offer fewer tools or shorter"
        " instructions, or configure a window the backend really supports (--context-window)."
    )


def max_output(budget: Budget, estimate: int, settings: EngineSettings) -> int:
    """The output a request of `estimate` input tokens asks for: all the window leaves
    beside it and the margin, at least the reserve, at most the model's and the
    configured maximum.

    The reserve is what the budget keeps free (it moves the threshold); the reply itself
    may use every token the window has left. Asking for only the reserve would cut, by
    `length`, every reply longer than the session's earlier ones, each cut paid for with
    its thrown-away output and a re-ask, while the room to hold it was there.
    """
    cap = settings.max_output_tokens
    if settings.output_reserve_tokens is not None:
        cap = min(cap, settings.output_reserve_tokens)
    room = budget.window - budget.margin - estimate
    return max(1, min(cap, max(budget.output_reserve, room)))


def check_overhead(asm: FixedParts, budget: Budget, fixed: int, max_output_tokens: int) -> None:
    """Refuse a window the fixed parts (`fixed`, calibrated) leave no room in.

    Raises:
        ContextOverheadError: the fixed parts, twice the reserve and the margin exceed it.
    """
    # The reserve shrinks to fit a small window, but not below a useful reply: the fixed
    # parts must leave room for the floor and as much again for the conversation.
    least = min(RESERVE_FLOOR, max_output_tokens)
    reply = max(budget.output_reserve, least)
    if fixed + reply * 2 + budget.margin > budget.window:
        raise ContextOverheadError(overhead_message(asm, budget, fixed, reply))


def check_grown_reserve(
    new: int,
    last: int,
    beside: int,
    room: int,
    window: int,
    settings: EngineSettings,
    entries: Sequence[Entry],
) -> None:
    """Refuse a reserve grown after an OUTPUT_LENGTH that is no larger than the one cut at
    (`last`), or does not fit `beside` the deepest cut a checkpoint could make.

    Raises:
        OutputLengthError: the reserve that overflowed was already the largest possible; it
            names every limit (`room`: half of what the window leaves beside the fixed parts).
    """
    if last < new <= beside:
        return
    limits = [f"model max output {settings.max_output_tokens:,}"]
    if settings.output_reserve_tokens is not None:
        limits.append(f"configured output_reserve_tokens {settings.output_reserve_tokens:,}")
    limits.append(f"half of what the {window:,}-token window leaves: {room:,}")
    limits.append(f"beside the smallest context a checkpoint leaves: {max(beside, 0):,}")
    raise OutputLengthError(
        f"the reply was cut at the output limit ({last:,} tokens) and no larger reserve"
        f" fits ({'; '.join(limits)}). The partial reply is kept in the ledger as"
        f" discarded{discarded_preview(entries)}. Ask for smaller steps, or use a"
        " larger window or output limit."
    )


def no_fit_message(tokens: int, budget: Budget, session_id: str) -> str:
    """The CONTEXT_PRESSURE_LOOP message when even a checkpoint leaves the view too large."""
    return (
        f"even after a checkpoint the view needs ~{tokens:,} tokens and only {budget.usable:,}"
        f" are usable (window {budget.window:,}, output reserve {budget.output_reserve:,},"
        f" margin {budget.margin:,}). Nothing was sent; all work is kept in the ledger: resume"
        f" session {session_id} with a larger window."
    )
