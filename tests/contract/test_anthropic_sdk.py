"""The official `anthropic` SDK against the fake server: proof the fake speaks the real wire."""

from __future__ import annotations

import anthropic
import pytest

from comal.testing.fake_server import FakeServer


def client_for(server: FakeServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="sk-ant-test", max_retries=0)


def test_stream_text_and_cumulative_usage() -> None:
    turn = {
        "text": "Hello from the fake.",
        "usage": {
            "input_tokens": 32012,
            "cached_tokens": 30000,
            "cache_write_tokens": 2000,
            "output_tokens": 7,
        },
        "usage_updates": 3,
    }
    with (
        FakeServer([turn]) as server,
        client_for(server).messages.stream(
            model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Hello from the fake."
    assert final.stop_reason == "end_turn"
    usage = final.usage
    assert (usage.input_tokens, usage.output_tokens) == (12, 7)
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (30000, 2000)


def test_stream_thinking_and_parallel_tool_use() -> None:
    turn = {
        "reasoning": "List, then read.",
        "text": "On it.",
        "tool_calls": [
            {"id": "toolu_1", "name": "shell", "arguments": {"cmd": "ls"}},
            {"id": "toolu_2", "name": "read_file", "arguments": {"path": "a.py"}},
        ],
    }
    with (
        FakeServer([turn]) as server,
        client_for(server).messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=4000,
            thinking={"type": "enabled", "budget_tokens": 2000},
            messages=[{"role": "user", "content": "go"}],
        ) as stream,
    ):
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    kinds = [block.type for block in final.content]
    assert kinds == ["thinking", "text", "tool_use", "tool_use"]
    thinking = final.content[0]
    assert thinking.type == "thinking"
    assert thinking.thinking == "List, then read."
    assert thinking.signature
    uses = [b for b in final.content if b.type == "tool_use"]
    assert [(u.id, u.name, u.input) for u in uses] == [
        ("toolu_1", "shell", {"cmd": "ls"}),
        ("toolu_2", "read_file", {"path": "a.py"}),
    ]


def test_redacted_thinking_block() -> None:
    with FakeServer([{"reasoning": "secret", "redacted_reasoning": True, "text": "ok"}]) as server:
        message = client_for(server).messages.create(
            model="claude-opus-4-7", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        )
    assert [b.type for b in message.content] == ["redacted_thinking", "text"]


def test_prompt_too_long_is_a_typed_400() -> None:
    with (
        FakeServer(["unused"], window=30) as server,
        pytest.raises(anthropic.BadRequestError) as info,
    ):
        client_for(server).messages.create(
            model="claude-sonnet-4-6",
            max_tokens=100,
            messages=[{"role": "user", "content": "word " * 200}],
        )
    assert "prompt is too long" in str(info.value)
    assert info.value.status_code == 400


def test_overloaded_529() -> None:
    with (
        FakeServer([{"error": "overloaded"}]) as server,
        pytest.raises(anthropic.InternalServerError) as info,
    ):
        client_for(server).messages.create(
            model="claude-sonnet-4-6",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
        )
    assert info.value.status_code == 529
    assert isinstance(info.value, anthropic.OverloadedError)


def test_max_tokens_stop_reason() -> None:
    with FakeServer([{"text": "trunc", "finish": "length"}]) as server:
        message = client_for(server).messages.create(
            model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    assert message.stop_reason == "max_tokens"
