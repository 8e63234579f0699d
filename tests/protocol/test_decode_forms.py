"""Stream forms peers accept: Codex's Chat tests, and refusal parts on the Responses wire."""

from __future__ import annotations

import json

from comal.messages import Finish, JSONObject, ReasoningPart, ToolCallPart
from comal.providers import openai_chat, openai_responses
from comal.providers.base import (
    Completed,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallDone,
)


def chat(*chunks: JSONObject, done: bool = True) -> list[str]:
    lines: list[str] = []
    for chunk in chunks:
        lines += [f"data: {json.dumps(chunk)}", ""]
    return [*lines, *(["data: [DONE]", ""] if done else [])]


def closing(text: str, model: str = "m") -> ReasoningDelta:
    return ReasoningDelta("", part=ReasoningPart("openai-chat", model, text=text))


# The streams of openai/codex `codex-rs/core/tests/chat_completions_sse.rs`.


def test_reasoning_as_an_object_with_text_or_content() -> None:
    lines = chat(
        {"choices": [{"delta": {"reasoning": {"text": "partA"}}}]},
        {"choices": [{"delta": {"reasoning": {"content": "partB"}}}]},
        {"choices": [{"delta": {"content": "answer"}}]},
        {"choices": [{"delta": {}, "finish_reason": "stop"}]},
        done=False,
    )
    assert list(openai_chat.decode_stream(lines, model="m")) == [
        ReasoningDelta("partA"),
        ReasoningDelta("partB"),
        closing("partApartB"),
        TextDelta("answer"),
        Completed(Finish.STOP, "stop"),
    ]


def test_reasoning_as_a_string() -> None:
    lines = chat(
        {"choices": [{"delta": {"reasoning": "think1"}}]},
        {"choices": [{"delta": {"content": "ok"}}]},
        {"choices": [{"delta": {}, "finish_reason": "stop"}]},
        done=False,
    )
    events = list(openai_chat.decode_stream(lines, model="m"))
    assert events == [
        ReasoningDelta("think1"),
        closing("think1"),
        TextDelta("ok"),
        Completed(Finish.STOP, "stop"),
    ]


def test_a_final_message_instead_of_a_delta() -> None:
    lines = chat(
        {"choices": [{"message": {"reasoning": "final-cot"}, "finish_reason": "stop"}]},
        done=False,
    )
    assert list(openai_chat.decode_stream(lines, model="m")) == [
        ReasoningDelta("final-cot"),
        closing("final-cot"),
        Completed(Finish.STOP, "stop"),
    ]


def test_a_whole_message_with_text_and_tool_calls() -> None:
    message: JSONObject = {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        ],
    }
    lines = chat({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]})
    assert list(openai_chat.decode_stream(lines, model="m")) == [
        TextDelta("Looking."),
        ToolCallDone(ToolCallPart("call_1", "run", {})),
        Completed(Finish.TOOL_CALLS, "tool_calls"),
    ]


def test_reasoning_before_a_tool_call_without_an_index() -> None:
    call: JSONObject = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "run", "arguments": "{}"},
    }
    lines = chat(
        {"choices": [{"delta": {"reasoning": "pre-tool"}}]},
        {"choices": [{"delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]},
        done=False,
    )
    assert list(openai_chat.decode_stream(lines, model="m")) == [
        ReasoningDelta("pre-tool"),
        closing("pre-tool"),
        ToolCallDone(ToolCallPart("call_1", "run", {})),
        Completed(Finish.TOOL_CALLS, "tool_calls"),
    ]


def test_only_choice_zero_is_read() -> None:
    lines = chat(
        {"choices": [{"index": 1, "delta": {"content": "other"}}]},
        {"choices": [{"index": 0, "delta": {"content": "mine"}}]},
        {"choices": [{"index": 2, "delta": {"refusal": "no"}, "finish_reason": "stop"}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    assert list(openai_chat.decode_stream(lines, model="m")) == [
        TextDelta("mine"),
        Completed(Finish.STOP, "stop"),
    ]


def responses(*events: JSONObject) -> list[str]:
    out: list[str] = []
    for event in events:
        out += [f"event: {event['type']}", f"data: {json.dumps(event)}", ""]
    return out


COMPLETED: JSONObject = {
    "type": "response.completed",
    "response": {"status": "completed", "usage": None},
}


def test_responses_refusal_deltas_finish_as_refusal() -> None:
    part: JSONObject = {"type": "refusal", "refusal": "I can't help with that."}
    lines = responses(
        {"type": "response.refusal.delta", "item_id": "msg_1", "delta": "I can't"},
        {"type": "response.refusal.delta", "item_id": "msg_1", "delta": " help with that."},
        {"type": "response.refusal.done", "item_id": "msg_1", "refusal": part["refusal"]},
        {
            "type": "response.output_item.done",
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": [part]},
        },
        COMPLETED,
    )
    assert list(openai_responses.decode_stream(lines, model="m")) == [
        RefusalDelta("I can't"),
        RefusalDelta(" help with that."),
        Completed(Finish.REFUSAL, "completed"),
    ]


def test_responses_refusal_part_of_a_whole_message() -> None:
    item: JSONObject = {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "No."}],
    }
    lines = responses({"type": "response.output_item.done", "item": item}, COMPLETED)
    assert list(openai_responses.decode_stream(lines, model="m")) == [
        RefusalDelta("No."),
        Completed(Finish.REFUSAL, "completed"),
    ]
