"""What every wire's rendering shares: the per-request context, SSE items, error answers.

The usage numbers of a turn are its scripted ones where given, else measured: input tokens are
the request's estimated size, output tokens the o200k count of what the turn produces. Opaque
reasoning data (signatures, encrypted content) is derived from the reasoning text, so the same
turn always renders the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field

from comal.messages import JSONObject, JSONValue
from comal.testing.fake_checks import count_text_tokens
from comal.testing.fake_script import FakeTurn

SseItem = tuple[str | None, str]
"""(event name or None, data text)."""


@dataclass(frozen=True, slots=True)
class RenderContext:
    """Per-request facts the rendering needs."""

    model: str
    serial: int
    input_tokens: int
    include_usage: bool = True
    include_encrypted: bool = True


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """An HTTP error answer."""

    status: int
    body: JSONObject
    headers: dict[str, str] = field(default_factory=dict)


def pieces(text: str, size: int) -> list[str]:
    """`text` cut into chunks of `size` characters (at least 1)."""
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def usage_numbers(turn: FakeTurn, ctx: RenderContext) -> tuple[int, int, int, int, int]:
    """(input, cached, cache-write, output, reasoning) tokens the turn reports."""
    u = turn.usage
    total = ctx.input_tokens if u.input_tokens is None else u.input_tokens
    produced = turn.text + turn.reasoning + "".join(c.argument_text for c in turn.tool_calls)
    output = count_text_tokens(produced) if u.output_tokens is None else u.output_tokens
    reasoning = u.reasoning_tokens or (count_text_tokens(turn.reasoning) if turn.reasoning else 0)
    return total, u.cached_tokens, u.cache_write_tokens, output, reasoning


def signature(turn: FakeTurn, serial: int) -> str:
    """A thinking block's signature (stable for the same reasoning and request serial)."""
    digest = hashlib.sha256(turn.reasoning.encode()).hexdigest()[:16]
    return f"sig_fake_{serial}_{digest}"


def encrypted_reasoning(turn: FakeTurn) -> str:
    """Encrypted reasoning content (the reasoning text, base64)."""
    return "enc_fake_" + base64.b64encode(turn.reasoning.encode()).decode()


def dump_json(obj: JSONValue) -> str:
    """Compact JSON for event data."""
    return json.dumps(obj, separators=(",", ":"))
