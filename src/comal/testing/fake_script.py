"""The fake server's script: wire-independent turns, parsed from JSON into frozen values.

Script file format (JSON): either a list of turns or an object
`{"turns": [...], "window": N, "model": "name", "overflow_form": "openai", ...}` whose extra keys
are `FakeServerOptions` fields. A turn is an object; every key is optional:

- `text`: assistant text.
- `reasoning`: reasoning text (Anthropic thinking + signature, Responses reasoning item with
  encrypted content, Chat `reasoning_content`); `redacted_reasoning: true` sends Anthropic
  `redacted_thinking` instead.
- `tool_calls`: `[{"id": "call_1", "name": "shell", "arguments": {...}}]`; `"raw_arguments":
  "{bad"` sends that text as is.
- `usage`: `{"input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens",
  "reasoning_tokens"}`; a missing input/output count is the server's own count.
  `usage_updates`: Anthropic only, how many cumulative `message_delta` events (default 1).
- `finish`: `stop`, `tool_calls`, `length`, `context_window_exceeded`, `content_filter`,
  `refusal`, `pause` (default: `tool_calls` when there are calls, else `stop`).
- `error`: answer with an error instead: `context_length`, `context_length_output`,
  `rate_limit`, `overloaded`, `auth`, `invalid_request`, `server_error`, `quota`;
  `error_form` picks the Chat overflow body (`openai`, `vllm`, `vllm_plus`, `vllm_too_large`,
  `llamacpp`, `deepseek`, `gemini`); `error_in_stream: true` sends it as an SSE event after
  the stream started (status 200); `retry_after` (seconds) adds a `retry-after` header.
- `cut_after_events`: close the connection after that many SSE events; with
  `cut_mid_event: true` half of the next event is sent first.
- `delay_s`: sleep between events (slow stream); `stall_after_events` + `stall_s`: sleep once.
- `chunk_chars`: characters per text/argument delta (default 16).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from comal.errors import ConfigError
from comal.messages import JSONObject

ERROR_KINDS = (
    "context_length",
    "context_length_output",
    "rate_limit",
    "overloaded",
    "auth",
    "invalid_request",
    "server_error",
    "quota",
)
CHAT_OVERFLOW_FORMS = (
    "openai",
    "vllm",
    "vllm_plus",
    "vllm_too_large",
    "llamacpp",
    "deepseek",
    "gemini",
)


@dataclass(frozen=True, slots=True)
class FakeToolCall:
    """One scripted tool call."""

    call_id: str
    name: str
    arguments: JSONObject | None = None
    raw_arguments: str | None = None

    @property
    def argument_text(self) -> str:
        """The exact argument text the server sends."""
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments or {})


@dataclass(frozen=True, slots=True)
class FakeUsage:
    """Scripted usage; None input/output mean "the server's own count"."""

    input_tokens: int | None = None
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int | None = None
    reasoning_tokens: int = 0


@dataclass(frozen=True, slots=True)
class FakeTurn:
    """One scripted answer (see the module docstring for the JSON keys)."""

    text: str = ""
    reasoning: str = ""
    redacted_reasoning: bool = False
    tool_calls: tuple[FakeToolCall, ...] = ()
    usage: FakeUsage = FakeUsage()
    usage_updates: int = 1
    finish: str | None = None
    error: str | None = None
    error_form: str | None = None
    error_in_stream: bool = False
    retry_after: float | None = None
    cut_after_events: int | None = None
    cut_mid_event: bool = False
    delay_s: float = 0.0
    stall_after_events: int | None = None
    stall_s: float = 0.0
    chunk_chars: int = 16

    @property
    def normalized_finish(self) -> str:
        """The finish this turn ends with."""
        return self.finish or ("tool_calls" if self.tool_calls else "stop")


def _turn(raw: Mapping[str, Any], index: int) -> FakeTurn:
    known = {f.name for f in fields(FakeTurn)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"fake script turn {index}: unknown keys {unknown}")
    values = dict(raw)
    calls: list[FakeToolCall] = []
    for call in values.pop("tool_calls", []) or []:
        if not isinstance(call, Mapping) or "name" not in call:
            raise ConfigError(f"fake script turn {index}: a tool call needs a name")
        calls.append(
            FakeToolCall(
                call_id=str(call.get("id", f"call_{index}_{len(calls)}")),
                name=str(call["name"]),
                arguments=call.get("arguments"),
                raw_arguments=call.get("raw_arguments"),
            )
        )
    usage = FakeUsage(**dict(values.pop("usage", {}) or {}))
    error = values.get("error")
    if error is not None and error not in ERROR_KINDS:
        raise ConfigError(f"fake script turn {index}: unknown error {error!r}")
    form = values.get("error_form")
    if form is not None and form not in CHAT_OVERFLOW_FORMS:
        raise ConfigError(f"fake script turn {index}: unknown error_form {form!r}")
    try:
        return FakeTurn(tool_calls=tuple(calls), usage=usage, **values)
    except TypeError as exc:
        raise ConfigError(f"fake script turn {index}: {exc}") from exc


def parse_turns(raw: Any) -> tuple[FakeTurn, ...]:
    """Turns from decoded JSON (a list of turn objects).

    Raises:
        ConfigError: the script is malformed.
    """
    if not isinstance(raw, list):
        raise ConfigError("a fake script's turns must be a JSON list")
    turns = []
    for index, item in enumerate(raw):
        if isinstance(item, str):
            turns.append(FakeTurn(text=item))
        elif isinstance(item, Mapping):
            turns.append(_turn(item, index))
        else:
            raise ConfigError(f"fake script turn {index} must be an object or a string")
    return tuple(turns)


def load_script(path: Path) -> tuple[tuple[FakeTurn, ...], dict[str, Any]]:
    """Read a script file: its turns and any server options it carries."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read fake script {path}: {exc}") from exc
    if isinstance(raw, list):
        return parse_turns(raw), {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a fake script is a list of turns or an object with 'turns'")
    options = dict(raw)
    return parse_turns(options.pop("turns", [])), options
