"""OpenAI Responses API adapter.

- `encode_request` is pure. Requests are stateless (`store: false`) and ask for
  `include: ["reasoning.encrypted_content"]`, so reasoning items come back with their encrypted
  content and can be replayed verbatim (without their id: unstored items cannot be looked up).
  `truncation: "disabled"` keeps the server from silently dropping the start of the
  conversation: Comal manages the context itself.
- `decode_stream` is pure: `response.output_text.delta` → text, reasoning summary/text deltas →
  reasoning, `response.refusal.delta` (or a message's `refusal` part) → refusal, which makes a
  completed response finish as `refusal`, `response.output_item.done` closes reasoning items
  and function calls,
  `response.completed` / `response.incomplete` carry usage and the finish, `error` and
  `response.failed` are classified errors. `incomplete/max_output_tokens` is `length`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

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
    RefusalDelta,
    TextDelta,
    UsageReport,
    WireApi,
    replays,
)
from comal.providers.discovery import OpenAICompatibleWire
from comal.providers.error_mapping import classify_error_object
from comal.providers.http_stream import WireProvider
from comal.providers.sse import SseEvent, decoding, parse_json_object
from comal.providers.tool_calls import decode_tool_call
from comal.providers.usage_mapping import usage_from_openai_responses

WIRE = WireApi.OPENAI_RESPONSES

_INCOMPLETE = {"max_output_tokens": Finish.LENGTH, "content_filter": Finish.CONTENT_FILTER}


def _image(media: MediaPart) -> JSONObject:
    return {"type": "input_image", "image_url": f"data:{media.media_type};base64,{media.data_b64}"}


def _user_items(message: Message) -> list[JSONValue]:
    items: list[JSONValue] = []
    content: list[JSONValue] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            items.append(
                {"type": "function_call_output", "call_id": part.call_id, "output": part.content}
            )
            if part.media:
                content.append(
                    {
                        "type": "input_text",
                        "text": f"[images returned by {part.name} {part.call_id}]",
                    }
                )
                content.extend(_image(m) for m in part.media)
        elif isinstance(part, TextPart):
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, MediaPart):
            content.append(_image(part))
    if content:
        items.append({"role": "user", "content": content})
    return items


def _assistant_items(message: Message, model: str) -> list[JSONValue]:
    items: list[JSONValue] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            if replays(WIRE_API, part, model):
                summary: list[JSONValue] = (
                    [{"type": "summary_text", "text": part.text}] if part.text else []
                )
                items.append(
                    {
                        "type": "reasoning",
                        "summary": summary,
                        "encrypted_content": part.encrypted_content,
                    }
                )
        elif isinstance(part, TextPart):
            if part.text:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": part.text}],
                    }
                )
        elif isinstance(part, ToolCallPart):
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.call_id,
                    "name": part.name,
                    "arguments": json.dumps(part.arguments, ensure_ascii=False),
                }
            )
    return items


def encode_request(request: ModelRequest) -> JSONObject:
    """The Responses request JSON (pure)."""
    items: list[JSONValue] = []
    for message in request.messages:
        if message.role == "assistant":
            items.extend(_assistant_items(message, request.model))
        else:
            items.extend(_user_items(message))
    body: JSONObject = {"model": request.model}
    if request.system:
        body["instructions"] = request.system
    body["input"] = items
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in request.tools
        ]
        body["tool_choice"] = "auto"
    body["max_output_tokens"] = request.max_output_tokens
    if request.reasoning_effort:
        body["reasoning"] = {"effort": request.reasoning_effort, "summary": "auto"}
    body.update(
        {
            "stream": True,
            "store": False,
            "include": ["reasoning.encrypted_content"],
            "truncation": "disabled",
        }
    )
    return body


def _text_of(parts: JSONValue, kind: str) -> list[str]:
    if not isinstance(parts, list):
        return []
    texts: list[str] = []
    for part in parts:
        text = part.get("text") if isinstance(part, dict) and part.get("type") == kind else None
        if isinstance(text, str):
            texts.append(text)
    return texts


@dataclass(slots=True)
class ResponsesDecoder:
    """Stream decoder for Responses API events."""

    model: str
    _text_items: set[str] = field(default_factory=set)
    _refusal_items: set[str] = field(default_factory=set)
    _saw_calls: bool = False
    _saw_refusal: bool = False

    def feed(self, event: SseEvent) -> list[ProviderEvent]:
        """Decode one event."""
        obj = parse_json_object(event.data, "responses")
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = event.event or ""
        delta = obj.get("delta")
        if kind == "response.output_text.delta" and isinstance(delta, str):
            item_id = obj.get("item_id")
            if isinstance(item_id, str):
                self._text_items.add(item_id)
            return [TextDelta(delta)] if delta else []
        if kind == "response.refusal.delta" and isinstance(delta, str):
            item_id = obj.get("item_id")
            if isinstance(item_id, str):
                self._refusal_items.add(item_id)
            self._saw_refusal = True
            return [RefusalDelta(delta)] if delta else []
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [ReasoningDelta(delta)] if isinstance(delta, str) and delta else []
        if kind == "response.output_item.done":
            item = obj.get("item")
            return self._item_done(item) if isinstance(item, dict) else []
        if kind in ("response.completed", "response.incomplete"):
            response = obj.get("response")
            return self._completed(response if isinstance(response, dict) else {})
        if kind == "response.failed":
            response = obj.get("response")
            error = response.get("error") if isinstance(response, dict) else None
            raise classify_error_object(
                {"error": error} if isinstance(error, dict) else obj,
                status=None,
                raw=event.data[:4000],
            )
        if kind == "error":
            raise classify_error_object(obj, status=None, raw=event.data[:4000])
        return []

    def _item_done(self, item: JSONObject) -> list[ProviderEvent]:
        kind = item.get("type")
        item_id = item.get("id")
        if kind == "reasoning":
            texts = _text_of(item.get("summary"), "summary_text") or _text_of(
                item.get("content"), "reasoning_text"
            )
            encrypted = item.get("encrypted_content")
            part = ReasoningPart(
                WIRE.value,
                self.model,
                text="\n\n".join(texts),
                encrypted_content=encrypted if isinstance(encrypted, str) else None,
                item_id=item_id if isinstance(item_id, str) else None,
            )
            return [ReasoningDelta("", part=part)]
        if kind == "function_call":
            self._saw_calls = True
            call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
            return [
                decode_tool_call(
                    call_id if isinstance(call_id, str) else "",
                    name if isinstance(name, str) else "",
                    arguments if isinstance(arguments, str) else "",
                )
            ]
        if kind == "message":
            return self._whole_message(item, item_id)
        return []

    def _whole_message(self, item: JSONObject, item_id: JSONValue) -> list[ProviderEvent]:
        """The parts of a message the server sent whole, without deltas."""
        out: list[ProviderEvent] = []
        if item_id not in self._text_items:
            text = "".join(_text_of(item.get("content"), "output_text"))
            out.extend([TextDelta(text)] if text else [])
        if item_id not in self._refusal_items:
            parts = item.get("content")
            for part in parts if isinstance(parts, list) else []:
                refusal = part.get("refusal") if isinstance(part, dict) else None
                if isinstance(part, dict) and part.get("type") == "refusal" and refusal:
                    self._saw_refusal = True
                    out.append(RefusalDelta(str(refusal)))
        return out

    def _completed(self, response: JSONObject) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        usage = response.get("usage")
        if isinstance(usage, dict):
            out.append(UsageReport(usage_from_openai_responses(usage), usage))
        status = response.get("status")
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        raw: str | None
        finish: Finish
        if status == "incomplete":
            raw = f"incomplete:{reason}" if isinstance(reason, str) else "incomplete"
            finish = _INCOMPLETE.get(reason if isinstance(reason, str) else "", Finish.UNKNOWN)
        elif status == "completed":
            raw, finish = "completed", (Finish.TOOL_CALLS if self._saw_calls else Finish.STOP)
            if self._saw_refusal and finish is Finish.STOP:
                finish = Finish.REFUSAL
        else:
            raw, finish = (status if isinstance(status, str) else None), Finish.UNKNOWN
        out.append(Completed(finish, raw))
        return out

    def end(self) -> list[ProviderEvent]:
        """No `response.completed` arrived: the stream was cut."""
        return []


decode_stream = decoding(ResponsesDecoder)
"""Decode a Responses SSE body (pure; see `decoding`)."""


class OpenAIResponsesProvider(WireProvider):
    """Responses API over an injected `httpx2.AsyncClient`."""

    wire = WIRE
    decoder_type = ResponsesDecoder

    def url(self) -> str:
        """`{base_url}/responses`."""
        return f"{self._cfg.base_url}/responses"

    def encode_json(self, request: ModelRequest) -> JSONObject:
        """See `encode_request`."""
        return encode_request(request)


class OpenAIResponsesWire(OpenAICompatibleWire):
    """The Responses wire as a `Wire` (listing and discovery as every OpenAI-style server)."""

    api = WIRE
    adapter = OpenAIResponsesProvider
    fallback = WireApi.OPENAI_CHAT

    def replayable(self, part: ReasoningPart) -> bool:
        """A reasoning item needs its encrypted content (requests are sent with `store: false`)."""
        return bool(part.encrypted_content)


WIRE_API = OpenAIResponsesWire()
"""The Responses wire, registered in `providers/wires.py`."""
