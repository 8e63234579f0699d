"""Anthropic Messages adapter.

- `encode_request` is pure: `system` as a cached text block, tool results first in the user
  turn that follows the calls (Anthropic requires them immediately after), `thinking` /
  `redacted_thinking` blocks replayed with their signatures only to the same model, and
  `cache_control` breakpoints on the last tool, the system block and the last message, so the
  stable prefix is cached. Empty text blocks are omitted (the API rejects them).
- `decode_stream` is pure: content blocks by index; `message_start` usage overlaid by the
  cumulative `message_delta` usage (latest wins, never summed); `message_stop` → usage and
  `Completed`. `max_tokens` is `length`; `model_context_window_exceeded` stays distinct;
  `refusal` keeps its `stop_details` (category, explanation) on `Completed.details`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

import httpx2

from comal.config import ProviderConfig
from comal.messages import (
    Finish,
    JSONObject,
    JSONValue,
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from comal.providers.base import (
    Completed,
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    UsageReport,
    WireApi,
    replays,
)
from comal.providers.discovery import DiscoveredWindow, anthropic_window, server_root
from comal.providers.error_mapping import classify_error_object
from comal.providers.http_stream import WireProvider
from comal.providers.sse import SseEvent, decoding, parse_json_object
from comal.providers.tool_calls import decode_tool_call
from comal.providers.usage_mapping import merge_anthropic_usage, usage_from_anthropic

WIRE = WireApi.ANTHROPIC_MESSAGES
API_VERSION = "2023-06-01"

_STOP = {
    "end_turn": Finish.STOP,
    "stop_sequence": Finish.STOP,
    "tool_use": Finish.TOOL_CALLS,
    "max_tokens": Finish.LENGTH,
    "model_context_window_exceeded": Finish.CONTEXT_WINDOW_EXCEEDED,
    "refusal": Finish.REFUSAL,
    "pause_turn": Finish.PAUSE,
}
_THINKING_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}
_CACHE: JSONObject = {"type": "ephemeral"}


_TOOL_ID = re.compile(r"[A-Za-z0-9_-]+")
_NOT_TOOL_ID = re.compile(r"[^A-Za-z0-9_-]")


def tool_id(call_id: str) -> str:
    """`call_id` as the Messages API takes a tool id (it refuses any other than
    `^[a-zA-Z0-9_-]+$` with a 400): unchanged when it is one; otherwise each other character
    becomes `_` and a digest of the whole id follows, so two ids never meet. Such ids come from
    elsewhere: another server's, or an imported session's `<id>#<n>`. A call and its result map
    alike, so they stay paired; the ledger keeps the id as recorded."""
    if _TOOL_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{_NOT_TOOL_ID.sub('_', call_id)}_{digest}"


def _image(media: MediaPart) -> JSONObject:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media.media_type, "data": media.data_b64},
    }


def _user_blocks(message: Message) -> list[JSONObject]:
    results: list[JSONObject] = []
    rest: list[JSONObject] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            block: JSONObject = {"type": "tool_result", "tool_use_id": tool_id(part.call_id)}
            if part.media:
                content: list[JSONValue] = [{"type": "text", "text": part.content or "(no text)"}]
                content.extend(_image(m) for m in part.media)
                block["content"] = content
            else:
                block["content"] = part.content
            if part.is_error:
                block["is_error"] = True
            results.append(block)
        elif isinstance(part, TextPart):
            if part.text:
                rest.append({"type": "text", "text": part.text})
        elif isinstance(part, MediaPart):
            rest.append(_image(part))
    return results + rest


def _assistant_blocks(message: Message, model: str) -> list[JSONObject]:
    blocks: list[JSONObject] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            if not replays(WIRE_API, part, model):
                continue
            if part.redacted_data:
                blocks.append({"type": "redacted_thinking", "data": part.redacted_data})
            else:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature}
                )
        elif isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            call_id = tool_id(part.call_id)
            blocks.append(
                {"type": "tool_use", "id": call_id, "name": part.name, "input": part.arguments}
            )
    return blocks


def encode_request(request: ModelRequest) -> JSONObject:
    """The Messages request JSON (pure)."""
    messages: list[tuple[str, list[JSONObject]]] = []
    for message in request.messages:
        if message.role == "assistant":
            blocks = _assistant_blocks(message, request.model)
        else:
            blocks = _user_blocks(message)
        if blocks:
            messages.append((message.role, blocks))
    if messages:
        closing = messages[-1][1][-1]
        if closing.get("type") not in ("thinking", "redacted_thinking"):
            messages[-1][1][-1] = {**closing, "cache_control": _CACHE}
    body: JSONObject = {"model": request.model, "max_tokens": request.max_output_tokens}
    if request.system:
        body["system"] = [{"type": "text", "text": request.system, "cache_control": _CACHE}]
    body["messages"] = [
        {"role": role, "content": list[JSONValue](blocks)} for role, blocks in messages
    ]
    if request.tools:
        tools: list[JSONObject] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        tools[-1] = {**tools[-1], "cache_control": _CACHE}
        body["tools"] = list[JSONValue](tools)
        body["tool_choice"] = {"type": "auto"}
    budget = _THINKING_BUDGET.get(request.reasoning_effort or "")
    if budget is not None and request.max_output_tokens > 1024:
        # The budget must stay below max_tokens and at or above 1,024.
        budget = max(1024, min(budget, request.max_output_tokens - 1))
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    body["stream"] = True
    return body


@dataclass(slots=True)
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    signature: str | None = None
    data: str | None = None
    call_id: str = ""
    name: str = ""
    input: JSONValue = None


@dataclass(slots=True)
class AnthropicDecoder:
    """Stream decoder for Messages events."""

    model: str
    _blocks: dict[int, _Block] = field(default_factory=dict)
    _usage: JSONObject = field(default_factory=dict)
    _stop: str | None = None
    _stop_details: JSONObject | None = None

    def feed(self, event: SseEvent) -> list[ProviderEvent]:
        """Decode one event."""
        obj = parse_json_object(event.data, "messages")
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = event.event or ""
        if kind == "message_start":
            message = obj.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            if isinstance(usage, dict):
                self._usage = merge_anthropic_usage(self._usage, usage)
            return []
        if kind == "content_block_start":
            return self._start(obj)
        if kind == "content_block_delta":
            return self._delta(obj)
        if kind == "content_block_stop":
            index = obj.get("index")
            block = self._blocks.pop(index, None) if isinstance(index, int) else None
            return self._close(block) if block is not None else []
        if kind == "message_delta":
            delta = obj.get("delta")
            stop = delta.get("stop_reason") if isinstance(delta, dict) else None
            if isinstance(stop, str):
                self._stop = stop
            details = delta.get("stop_details") if isinstance(delta, dict) else None
            if isinstance(details, dict):
                self._stop_details = details
            usage = obj.get("usage")
            if isinstance(usage, dict):
                self._usage = merge_anthropic_usage(self._usage, usage)
            return []
        if kind == "message_stop":
            return self._complete()
        if kind == "error":
            raise classify_error_object(obj, status=None, raw=event.data[:4000])
        return []

    def _start(self, obj: JSONObject) -> list[ProviderEvent]:
        index, block = obj.get("index"), obj.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return []
        kind = str(block.get("type"))
        state = _Block(kind)
        self._blocks[index] = state
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                return [TextDelta(text)]
        elif kind == "thinking":
            text, signature = block.get("thinking"), block.get("signature")
            if isinstance(text, str) and text:
                state.text.append(text)
            state.signature = signature if isinstance(signature, str) and signature else None
            return [ReasoningDelta(text)] if isinstance(text, str) and text else []
        elif kind == "redacted_thinking":
            data = block.get("data")
            state.data = data if isinstance(data, str) else ""
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            state.call_id = call_id if isinstance(call_id, str) else ""
            state.name = name if isinstance(name, str) else ""
            state.input = block.get("input")
        return []

    def _delta(self, obj: JSONObject) -> list[ProviderEvent]:
        index, delta = obj.get("index"), obj.get("delta")
        state = self._blocks.get(index) if isinstance(index, int) else None
        if state is None or not isinstance(delta, dict):
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind == "thinking_delta":
            text = delta.get("thinking")
            if isinstance(text, str) and text:
                state.text.append(text)
                return [ReasoningDelta(text)]
        elif kind == "signature_delta":
            signature = delta.get("signature")
            if isinstance(signature, str):
                state.signature = (state.signature or "") + signature
        elif kind == "input_json_delta":
            partial = delta.get("partial_json")
            if isinstance(partial, str):
                state.text.append(partial)
        return []

    def _close(self, block: _Block) -> list[ProviderEvent]:
        if block.kind == "thinking":
            part = ReasoningPart(
                WIRE.value, self.model, text="".join(block.text), signature=block.signature
            )
            return [ReasoningDelta("", part=part)]
        if block.kind == "redacted_thinking":
            part = ReasoningPart(WIRE.value, self.model, redacted_data=block.data)
            return [ReasoningDelta("", part=part)]
        if block.kind == "tool_use":
            raw = "".join(block.text)
            if not raw and isinstance(block.input, dict) and block.input:
                # The whole input arrived in content_block_start.
                raw = json.dumps(block.input)
            return [decode_tool_call(block.call_id, block.name, raw)]
        return []

    def _complete(self) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        for index in sorted(self._blocks):
            out.extend(self._close(self._blocks[index]))
        self._blocks.clear()
        if self._usage:
            out.append(UsageReport(usage_from_anthropic(self._usage), dict(self._usage)))
        finish = _STOP.get(self._stop or "", Finish.UNKNOWN)
        out.append(Completed(finish, self._stop, self._stop_details))
        return out

    def end(self) -> list[ProviderEvent]:
        """A stream that delivered its stop reason but lost `message_stop` still completes."""
        return self._complete() if self._stop is not None else []


decode_stream = decoding(AnthropicDecoder)
"""Decode a Messages SSE body (pure; see `decoding`)."""


class AnthropicMessagesProvider(WireProvider):
    """Messages API over an injected `httpx2.AsyncClient`."""

    wire = WIRE
    decoder_type = AnthropicDecoder

    def url(self) -> str:
        """`{base_url}/v1/messages` (the base URL is the host, as for the official SDK)."""
        base = self._cfg.base_url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        """`x-api-key`."""
        return {"x-api-key": api_key}

    def headers(self) -> dict[str, str]:
        """Adds the API version header."""
        out = super().headers()
        out.setdefault("anthropic-version", API_VERSION)
        return out

    def encode_json(self, request: ModelRequest) -> JSONObject:
        """See `encode_request`."""
        return encode_request(request)


class AnthropicMessagesWire:
    """The Messages wire as a `Wire`: reasoning replayed with its signature (or redacted data),
    models listed at `/v1/models` with `x-api-key` and the API version, the window read from
    `/v1/models/{id}`, and no served model taken (Anthropic's servers list many)."""

    api = WIRE
    adapter = AnthropicMessagesProvider
    versioned_base = False
    fallback = WireApi.OPENAI_CHAT
    lists_served_model = False

    def replayable(self, part: ReasoningPart) -> bool:
        """`thinking` needs its signature; `redacted_thinking` its data."""
        return bool(part.signature) or bool(part.redacted_data)

    def models_url(self, base_url: str) -> str:
        """`/v1/models` at the server root."""
        return f"{server_root(base_url)}/v1/models"

    def listing_headers(self, api_key: str | None) -> dict[str, str]:
        """The API version, and `x-api-key` when there is a key."""
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    async def discover_window(
        self, cfg: ProviderConfig, client: httpx2.AsyncClient, api_key: str | None, timeout_s: float
    ) -> DiscoveredWindow | None:
        """`GET /v1/models/{id}` → `max_input_tokens`, `max_tokens`."""
        return await anthropic_window(client, cfg, self.listing_headers(api_key), timeout_s)


WIRE_API = AnthropicMessagesWire()
"""The Messages wire, registered in `providers/wires.py`."""
