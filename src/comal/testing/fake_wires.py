"""Render scripted turns and errors in each wire's real shapes (SSE events or JSON bodies).

Shapes follow the official SDK types (openai 3.57, anthropic 2.14) and the bodies recorded in
research tech.md §3: Chat chunks with a final `"choices": []` usage chunk and `[DONE]`
(`fake_wire_chat`); Responses `response.*` events ending in `response.completed` /
`response.incomplete` (`fake_wire_responses`); Anthropic `message_start` … `message_stop` with
cumulative `message_delta` usage (`fake_wire_anthropic`). Error bodies are the providers' own
(`fake_errors`), including every overflow form the adapters must classify.

This module is the wires' single entry: every renderer under one name, and `RENDERERS`, the
stream and whole-body renderer of each wire.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from comal.messages import JSONObject
from comal.testing.fake_render import ErrorAnswer, RenderContext, SseItem, dump_json
from comal.testing.fake_script import FakeTurn
from comal.testing.fake_wire_anthropic import anthropic_events, anthropic_json
from comal.testing.fake_wire_chat import chat_events, chat_json
from comal.testing.fake_wire_responses import responses_events, responses_object

__all__ = [
    "RENDERERS",
    "STREAM_PREFIX",
    "ErrorAnswer",
    "RenderContext",
    "SseItem",
    "anthropic_events",
    "anthropic_json",
    "chat_events",
    "chat_json",
    "dump_json",
    "responses_events",
    "responses_json",
    "responses_object",
]


def responses_json(turn: FakeTurn, ctx: RenderContext) -> JSONObject:
    """A non-streamed Responses answer (the final `response` object)."""
    return responses_object(turn, ctx, final=True)


EventRenderer = Callable[[FakeTurn, RenderContext], list[SseItem]]
JsonRenderer = Callable[[FakeTurn, RenderContext], JSONObject]

RENDERERS: Mapping[str, tuple[EventRenderer, JsonRenderer]] = {
    "openai-chat": (chat_events, chat_json),
    "openai-responses": (responses_events, responses_json),
    "anthropic-messages": (anthropic_events, anthropic_json),
}
"""Per wire: its stream renderer and its non-streamed body renderer."""
STREAM_PREFIX: Mapping[str, int] = {
    "openai-chat": 1,
    "openai-responses": 1,
    "anthropic-messages": 2,
}
"""Events sent before an in-stream error (role chunk, response.created, message_start+ping)."""
