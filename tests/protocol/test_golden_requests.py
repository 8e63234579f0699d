"""Each wire's request JSON is golden; reasoning is replayed only to its own wire and model."""

from __future__ import annotations

import json

import pytest

from comal.messages import Message, ReasoningPart, TextPart
from comal.providers import anthropic_messages, openai_chat, openai_responses
from comal.providers.base import ModelRequest, WireApi
from comal.providers.reasoning import count_dropped_reasoning, is_replayable
from tests.protocol.golden import check_golden
from tests.protocol.requests import rich_request


def test_openai_chat_golden() -> None:
    req = rich_request("openai-chat", "qwen3-coder")
    check_golden("openai_chat_rich.json", openai_chat.encode_request(req))


def test_openai_chat_golden_for_openai_reasoning_models() -> None:
    req = rich_request("openai-chat", "gpt-5", effort="high")
    body = openai_chat.encode_request(req, max_tokens_field="max_completion_tokens")
    check_golden("openai_chat_gpt5.json", body)


def test_openai_responses_golden() -> None:
    req = rich_request("openai-responses", "gpt-5", effort="medium")
    check_golden("openai_responses_rich.json", openai_responses.encode_request(req))


def test_anthropic_golden() -> None:
    req = rich_request("anthropic-messages", "claude-sonnet-4-5", effort="low")
    check_golden("anthropic_messages_rich.json", anthropic_messages.encode_request(req))


def test_chat_request_shape_essentials() -> None:
    body = openai_chat.encode_request(rich_request("openai-chat", "m"))
    assert body["stream_options"] == {"include_usage": True}
    messages = body["messages"]
    assert isinstance(messages, list)
    roles = [m["role"] for m in messages if isinstance(m, dict)]
    # system first; tool results right after the calling assistant turn, before the user text
    assert roles == ["system", "user", "assistant", "tool", "tool", "user", "user"]


def test_responses_request_is_stateless_and_untruncated() -> None:
    body = openai_responses.encode_request(rich_request("openai-responses", "gpt-5"))
    assert body["store"] is False
    assert body["truncation"] == "disabled"
    assert body["include"] == ["reasoning.encrypted_content"]
    reasoning = [i for i in body["input"] if i.get("type") == "reasoning"]  # type: ignore[union-attr]
    assert reasoning == [
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Plan: list then read."}],
            "encrypted_content": "enc_same",
        }
    ]


@pytest.mark.parametrize(
    ("wire", "encode"),
    [
        ("openai-chat", openai_chat.encode_request),
        ("openai-responses", openai_responses.encode_request),
        ("anthropic-messages", anthropic_messages.encode_request),
    ],
)
def test_foreign_reasoning_is_dropped_and_counted(wire, encode) -> None:
    req = rich_request(wire, "model-a")
    text = json.dumps(encode(req))
    assert "foreign" not in text
    assert "sig_other" not in text
    assert "enc_other" not in text
    assert count_dropped_reasoning(req, wire) == 1
    # Switching model drops the model's own reasoning too.
    switched = ModelRequest("model-b", req.system, req.messages, req.tools)
    assert "Plan: list then read." not in json.dumps(encode(switched))
    assert count_dropped_reasoning(switched, wire) == 2


def test_reasoning_without_what_the_wire_needs_is_not_replayed() -> None:
    assert not is_replayable(
        ReasoningPart("anthropic-messages", "m", text="x"), WireApi.ANTHROPIC_MESSAGES, "m"
    )
    assert is_replayable(
        ReasoningPart("anthropic-messages", "m", redacted_data="d"), WireApi.ANTHROPIC_MESSAGES, "m"
    )
    assert not is_replayable(
        ReasoningPart("openai-responses", "m", text="x"), "openai-responses", "m"
    )
    assert not is_replayable(ReasoningPart("openai-chat", "m"), "openai-chat", "m")


def test_anthropic_cache_breakpoints_and_no_empty_text() -> None:
    req = ModelRequest(
        "claude-haiku-4-5",
        "sys",
        (Message("user", (TextPart(""), TextPart("hi"))),),
    )
    body = anthropic_messages.encode_request(req)
    assert body["system"] == [
        {"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
        }
    ]
    assert "thinking" not in body


def test_encoding_is_deterministic() -> None:
    req = rich_request("openai-chat", "m")
    assert openai_chat.encode_request(req) == openai_chat.encode_request(req)
