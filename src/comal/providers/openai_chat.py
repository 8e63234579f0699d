"""OpenAI Chat Completions adapter (also Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, DeepSeek).

- `encode_request` is pure: system first, tool results split out of user messages into `tool`
  messages placed right after the assistant turn that called them, images as data URLs,
  `stream_options.include_usage` always requested so usage arrives in the final chunk.
- `decode_stream` is pure: text and `reasoning_content` (or `reasoning`, a string or an object
  with `text`/`content`) deltas, `refusal` deltas, tool-call fragments accumulated by index and
  emitted complete when the choice finishes, usage from the chunk with `"choices": []`,
  `Completed` at `[DONE]`. A chunk may carry its choice as `message` instead of `delta` (a
  server that sends the final message whole). A server that sends `finish_reason: stop` with
  tool calls (Ollama does) is normalized to `tool_calls`, and a stream that carried a refusal
  finishes as `refusal`; `raw_finish` keeps the server's word.
- Reasoning (`reasoning_content`) is replayed only to the same wire and model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from comal.errors import MalformedStreamError
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
from comal.providers.discovery import OpenAICompatibleWire, is_openai_hosted, server_root
from comal.providers.error_mapping import classify_error_object
from comal.providers.http_stream import WireProvider
from comal.providers.server_counts import llamacpp_count
from comal.providers.sse import SseEvent, decoding, parse_json_object
from comal.providers.tool_calls import decode_tool_call
from comal.providers.usage_mapping import usage_from_openai_chat

WIRE = WireApi.OPENAI_CHAT

_FINISH = {
    "stop": Finish.STOP,
    "tool_calls": Finish.TOOL_CALLS,
    "function_call": Finish.TOOL_CALLS,
    "length": Finish.LENGTH,
    "content_filter": Finish.CONTENT_FILTER,
}


def _image(media: MediaPart) -> JSONObject:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{media.media_type};base64,{media.data_b64}"},
    }


def _user_messages(message: Message) -> list[JSONObject]:
    out: list[JSONObject] = []
    result_media: list[JSONValue] = []
    content: list[JSONValue] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            out.append({"role": "tool", "tool_call_id": part.call_id, "content": part.content})
            if part.media:
                # Tool messages carry text only: their images follow in a user message.
                result_media.append(
                    {"type": "text", "text": f"[images returned by {part.name} {part.call_id}]"}
                )
                result_media.extend(_image(m) for m in part.media)
        elif isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, MediaPart):
            content.append(_image(part))
    if result_media:
        out.append({"role": "user", "content": result_media})
    if len(content) == 1 and isinstance(content[0], dict) and content[0].get("type") == "text":
        out.append({"role": "user", "content": content[0]["text"]})
    elif content:
        out.append({"role": "user", "content": content})
    return out


def _assistant_message(message: Message, model: str) -> JSONObject:
    reasoning = [
        p.text
        for p in message.parts
        if isinstance(p, ReasoningPart) and replays(WIRE_API, p, model)
    ]
    calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
    text = message.text
    # `""`, not null, when the turn is only tool calls: llama-cpp-python's validation rejects a
    # null content (HTTP 500), and every other server takes the empty string.
    out: JSONObject = {"role": "assistant", "content": text}
    if reasoning:
        out["reasoning_content"] = "".join(reasoning)
    if calls:
        out["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, ensure_ascii=False),
                },
            }
            for c in calls
        ]
    return out


def encode_request(request: ModelRequest, *, max_tokens_field: str = "max_tokens") -> JSONObject:
    """The Chat Completions request JSON (pure).

    Args:
        request: the wire-independent request.
        max_tokens_field: `max_tokens` (local servers) or `max_completion_tokens` (OpenAI's
            reasoning models refuse `max_tokens`).
    """
    messages: list[JSONValue] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role == "assistant":
            messages.append(_assistant_message(message, request.model))
        else:
            messages.extend(_user_messages(message))
    body: JSONObject = {
        "model": request.model,
        "messages": messages,
        max_tokens_field: request.max_output_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
        # Said explicitly: some servers (llama-cpp-python) leave the tools out of the prompt
        # without it.
        body["tool_choice"] = "auto"
    if request.reasoning_effort:
        body["reasoning_effort"] = request.reasoning_effort
    return body


def _first_choice(choices: JSONValue) -> JSONObject | None:
    """Choice 0 (Comal asks for one; a stream with `n > 1` interleaves the others)."""
    for choice in choices if isinstance(choices, list) else []:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return None


def _reasoning_text(delta: JSONObject) -> str:
    """`reasoning_content` or `reasoning`: a string, or an object with `text` or `content`."""
    for key in ("reasoning_content", "reasoning"):
        value = delta.get(key)
        if isinstance(value, dict):
            value = value.get("text", value.get("content"))
        if isinstance(value, str) and value:
            return value
    return ""


@dataclass(slots=True)
class _Call:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ChatDecoder:
    """Stream decoder for Chat Completions chunks."""

    model: str
    _calls: dict[int, _Call] = field(default_factory=dict)
    _reasoning: list[str] = field(default_factory=list)
    _finish: str | None = None
    _calls_flushed: bool = False
    _saw_calls: bool = False
    _saw_refusal: bool = False
    _saw_choice: bool = False
    _usage: JSONObject | None = None

    def _close_reasoning(self) -> list[ProviderEvent]:
        if not self._reasoning:
            return []
        part = ReasoningPart(WIRE.value, self.model, text="".join(self._reasoning))
        self._reasoning = []
        return [ReasoningDelta("", part=part)]

    def _flush_calls(self) -> list[ProviderEvent]:
        out = self._close_reasoning()
        if not self._calls_flushed:
            self._calls_flushed = True
            for index in sorted(self._calls):
                call = self._calls[index]
                out.append(decode_tool_call(call.call_id, call.name, "".join(call.arguments)))
        return out

    def _complete(self) -> list[ProviderEvent]:
        if not self._saw_choice:
            # `"choices": null` (or none at all) in every chunk: no answer was given, and an
            # empty one must not be recorded as if the model had said nothing.
            raise MalformedStreamError(
                "the stream ended without a choice in any chunk (`choices` was null, empty or"
                " missing): the server gave no answer"
            )
        out = self._flush_calls()
        if self._usage is not None:
            out.append(UsageReport(usage_from_openai_chat(self._usage), self._usage))
        finish = _FINISH.get(self._finish or "", Finish.UNKNOWN)
        if finish is Finish.STOP and self._saw_calls:
            finish = Finish.TOOL_CALLS
        if self._saw_refusal and finish in (Finish.STOP, Finish.UNKNOWN):
            finish = Finish.REFUSAL
        out.append(Completed(finish, self._finish))
        return out

    def feed(self, event: SseEvent) -> list[ProviderEvent]:
        """Decode one chunk."""
        if event.data.strip() == "[DONE]":
            return self._complete()
        obj = parse_json_object(event.data, "chat")
        if "error" in obj:
            raise classify_error_object(obj, status=None, raw=event.data[:4000])
        out: list[ProviderEvent] = []
        usage = obj.get("usage")
        if isinstance(usage, dict) and usage:
            self._usage = usage
        choice = _first_choice(obj.get("choices"))
        if choice is None:
            return out
        self._saw_choice = True
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = choice.get("message")
        if isinstance(delta, dict):
            out.extend(self._delta(delta))
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self._finish = finish
            out.extend(self._flush_calls())
        return out

    def _delta(self, delta: JSONObject) -> list[ProviderEvent]:
        out: list[ProviderEvent] = []
        reasoning = _reasoning_text(delta)
        if reasoning:
            self._reasoning.append(reasoning)
            out.append(ReasoningDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            out.extend(self._close_reasoning())
            out.append(TextDelta(content))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            out.extend(self._close_reasoning())
            self._saw_refusal = True
            out.append(RefusalDelta(refusal))
        fragments = delta.get("tool_calls")
        if isinstance(fragments, list):
            out.extend(self._close_reasoning())
            for position, fragment in enumerate(fragments):
                if isinstance(fragment, dict):
                    self._call_fragment(fragment, position)
        return out

    def _call_fragment(self, fragment: JSONObject, position: int) -> None:
        index = fragment.get("index")
        key = index if isinstance(index, int) else position
        call = self._calls.setdefault(key, _Call())
        self._saw_calls = True
        call_id = fragment.get("id")
        if isinstance(call_id, str) and call_id:
            call.call_id = call_id
        function = fragment.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str) and name:
                call.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments.append(arguments)
            elif isinstance(arguments, dict):
                # A few servers send the arguments already parsed.
                call.arguments.append(json.dumps(arguments))

    def end(self) -> list[ProviderEvent]:
        """Accept a stream that finished its choice but omitted `[DONE]`; otherwise it was cut."""
        return self._complete() if self._finish is not None else []


decode_stream = decoding(ChatDecoder)
"""Decode a Chat Completions SSE body (pure; see `decoding`)."""


class OpenAIChatProvider(WireProvider):
    """Chat Completions over an injected `httpx2.AsyncClient`."""

    wire = WIRE
    decoder_type = ChatDecoder
    whole_reply_decodes = True
    _counts: bool | None = None
    """Whether the server counts tokens (`count_input_tokens`); None until asked."""

    def url(self) -> str:
        """`{base_url}/chat/completions`."""
        return f"{self._cfg.base_url}/chat/completions"

    def max_tokens_field(self) -> str:
        """`max_completion_tokens` on OpenAI itself, `max_tokens` for compatible servers."""
        return "max_completion_tokens" if "api.openai.com" in self._cfg.base_url else "max_tokens"

    def encode_json(self, request: ModelRequest) -> JSONObject:
        """See `encode_request`."""
        return encode_request(request, max_tokens_field=self.max_tokens_field())

    async def count_input_tokens(self, request: ModelRequest) -> int | None:
        """llama.cpp's exact count of the request (see `server_counts`); None elsewhere.

        Asked only of a server whose window discovery showed it is llama.cpp (`/props`).
        """
        llamacpp = self.capabilities.window_note.startswith("llama.cpp")
        if self._counts is False or not llamacpp or is_openai_hosted(self._cfg.base_url):
            return None
        headers = {k: v for k, v in self.headers().items() if k != "accept"}
        count = await llamacpp_count(
            self._client, server_root(self._cfg.base_url), headers, self.encode(request)
        )
        self._counts = count is not None
        return count


class OpenAIChatWire(OpenAICompatibleWire):
    """The Chat Completions wire as a `Wire` (listing, discovery: as any OpenAI-style server)."""

    api = WIRE
    adapter = OpenAIChatProvider
    fallback = WireApi.OPENAI_RESPONSES

    def replayable(self, part: ReasoningPart) -> bool:
        """`reasoning_content` needs text."""
        return bool(part.text)


WIRE_API = OpenAIChatWire()
"""The Chat Completions wire, registered in `providers/wires.py`."""
