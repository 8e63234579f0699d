"""`ScriptedProvider`: a real `Provider` whose answers come from a list of scripted turns.

Used by unit tests and the offline demo. Each call to `send()` (or `stream()`) consumes the next
turn and records the `ModelRequest` it received (`requests`) and the bytes sent (`bodies`). A
turn yields reasoning, then text, then tool calls (valid and invalid), usage and `Completed`, as
a real adapter would; a turn may instead raise a `ComalError` (before or after its events).
Asking for more turns than scripted raises `ScriptExhaustedError`, naming how many were scripted.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from comal.errors import ComalError, ScriptExhaustedError
from comal.messages import Finish, JSONObject, ReasoningPart, ToolCallPart, message_to_json
from comal.providers.base import (
    Capabilities,
    Completed,
    EncodedRequest,
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallDone,
    ToolCallInvalid,
    UsageReport,
    WireApi,
    encode_request,
)
from comal.usage import Usage


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    """One scripted model answer."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallPart, ...] = ()
    invalid_tool_calls: tuple[ToolCallInvalid, ...] = ()
    usage: Usage | None = None
    usage_raw: JSONObject | None = None
    finish: Finish | None = None
    """Default `tool_calls` when the turn has calls, else `stop` (`refusal` with a refusal)."""
    raw_finish: str | None = None
    error: ComalError | None = None
    """Raised instead of answering (or after the events, see `error_after_events`)."""
    error_after_events: bool = False
    chunk_size: int = 0
    """Split text into deltas of this many characters (0: one delta)."""
    refusal: str = ""
    """Refusal text (as Chat's `delta.refusal`); a turn with one finishes as `refusal`."""


def _chunks(text: str, size: int) -> list[str]:
    if not text:
        return []
    if size <= 0:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


class ScriptedProvider:
    """A provider that replays scripted turns and records what it was asked."""

    def __init__(
        self,
        turns: Sequence[ScriptedTurn | ComalError | str],
        *,
        name: str = "scripted",
        model: str = "scripted-model",
        wire: WireApi = WireApi.OPENAI_CHAT,
        capabilities: Capabilities | None = None,
    ) -> None:
        """Args:
        turns: the answers in order; a plain string is a text-only turn, a `ComalError` a
            turn that raises it.
        name: provider name.
        model: model name (reasoning parts are tagged with it).
        wire: the wire the provider pretends to speak.
        capabilities: defaults to a 45,000-token fallback window.
        """
        self.name = name
        self.model = model
        self.wire = wire
        self.capabilities = capabilities or Capabilities(
            context_window=45_000, max_output_tokens=8_192, window_source="fallback"
        )
        self.turns: tuple[ScriptedTurn, ...] = tuple(
            ScriptedTurn(text=t)
            if isinstance(t, str)
            else ScriptedTurn(error=t)
            if isinstance(t, ComalError)
            else t
            for t in turns
        )
        self.requests: list[ModelRequest] = []
        self.bodies: list[bytes] = []
        """The body of each request sent, in order."""

    @property
    def remaining(self) -> int:
        """Turns not consumed yet."""
        return len(self.turns) - len(self.requests)

    def encode(self, request: ModelRequest) -> bytes:
        """A canonical JSON rendering of the request (stands in for wire bytes)."""
        body = {
            "model": request.model,
            "system": request.system,
            "messages": [message_to_json(m) for m in request.messages],
            "tools": [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in request.tools
            ],
            "max_output_tokens": request.max_output_tokens,
            "reasoning_effort": request.reasoning_effort,
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")

    def events(self, turn: ScriptedTurn) -> list[ProviderEvent]:
        """The events one turn produces, in stream order."""
        out: list[ProviderEvent] = []
        if turn.reasoning:
            out.extend(ReasoningDelta(c) for c in _chunks(turn.reasoning, turn.chunk_size))
            part = ReasoningPart(self.wire.value, self.model, text=turn.reasoning)
            out.append(ReasoningDelta("", part=part))
        out.extend(TextDelta(c) for c in _chunks(turn.text, turn.chunk_size))
        out.extend(RefusalDelta(c) for c in _chunks(turn.refusal, turn.chunk_size))
        out.extend(ToolCallDone(call) for call in turn.tool_calls)
        out.extend(turn.invalid_tool_calls)
        if turn.usage is not None:
            out.append(UsageReport(turn.usage, turn.usage_raw or turn.usage.to_json()))
        finish = turn.finish or (
            Finish.REFUSAL
            if turn.refusal
            else Finish.TOOL_CALLS
            if turn.tool_calls
            else Finish.STOP
        )
        out.append(Completed(finish, turn.raw_finish or finish))
        return out

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Encode the request and `send` it."""
        return self.send(encode_request(self, request))

    async def send(self, encoded: EncodedRequest) -> AsyncIterator[ProviderEvent]:
        """Answer with the next scripted turn."""
        index = len(self.requests)
        self.requests.append(encoded.request)
        self.bodies.append(encoded.body)
        if index >= len(self.turns):
            raise ScriptExhaustedError(
                f"the script has {len(self.turns)} turn(s) and request {index + 1} asked for"
                " another"
            )
        turn = self.turns[index]
        if turn.error is not None and not turn.error_after_events:
            raise turn.error
        events = self.events(turn)
        if turn.error is not None:
            events = [e for e in events if not isinstance(e, Completed)]
        for event in events:
            yield event
        if turn.error is not None:
            raise turn.error
