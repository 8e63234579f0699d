"""Comal's adapters against the loopback fake server: every wire, every scripted behaviour."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from comal.errors import (
    AuthError,
    ContextLengthError,
    InvalidRequestError,
    NetworkError,
    OverloadedError,
    RateLimitError,
)
from comal.messages import JSONObject, JSONValue, Message, ToolResultPart, user_text
from comal.providers.base import TextDelta
from comal.providers.reply import collect
from comal.providers.transport import RetryingProvider
from comal.testing.fake_server import FakeServer
from tests.protocol.wiring import WIRES, provider_for, request

TOOL_TURN = {
    "reasoning": "Check the files.",
    "text": "Looking.",
    "tool_calls": [
        {"id": "call_a", "name": "shell", "arguments": {"cmd": "ls"}},
        {"id": "call_b", "name": "read_file", "arguments": {"path": "x.py"}},
    ],
    "usage": {
        "input_tokens": 1000,
        "cached_tokens": 600,
        "output_tokens": 50,
        "reasoning_tokens": 10,
    },
}


@pytest.mark.parametrize("wire", WIRES)
async def test_tool_round_trip_replays_reasoning_and_passes_invariants(wire) -> None:
    with FakeServer([TOOL_TURN, "All done."]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, wire, client)
            first = await collect(provider.stream(request([user_text("what is here?")])))
            assert [c.call_id for c in first.message.tool_calls] == ["call_a", "call_b"]
            assert first.finish == "tool_calls"
            assert first.usage.cache_read == 600
            assert first.usage.total_input == 1000
            results = Message(
                "user",
                (
                    ToolResultPart("call_a", "shell", "x.py\n"),
                    ToolResultPart("call_b", "read_file", "print(1)\n"),
                ),
            )
            history = [user_text("what is here?"), first.message, results]
            second = await collect(provider.stream(request(history)))
        assert second.message.text == "All done."
        stats = server.stats()
        assert (stats.requests, stats.served, stats.orphan_violations) == (2, 2, 0)
        replayed = json.dumps(server.received[1].body)
        if wire == "openai-chat":
            assert '"reasoning_content": "Check the files."' in replayed
        elif wire == "openai-responses":
            assert "enc_fake_" in replayed
        else:
            assert "sig_fake_1_" in replayed


@pytest.mark.parametrize("wire", WIRES)
async def test_orphan_call_is_refused_and_counted(wire) -> None:
    with FakeServer([TOOL_TURN, "unused"]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, wire, client)
            first = await collect(provider.stream(request([user_text("go")])))
            only_one = Message("user", (ToolResultPart("call_a", "shell", "ok"),))
            with pytest.raises(InvalidRequestError, match="call_b"):
                await collect(provider.stream(request([user_text("go"), first.message, only_one])))
        stats = server.stats()
        assert stats.orphan_violations == 1
        assert stats.remaining_turns == 1  # a refused request spends no turn


@pytest.mark.parametrize("wire", WIRES)
async def test_window_overflow_answers_the_wires_real_error(wire) -> None:
    with FakeServer(["never sent"], window=50) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, wire, client)
            with pytest.raises(ContextLengthError) as info:
                await collect(provider.stream(request([user_text("word " * 200)])))
        assert server.stats().overflows == 1
        if wire != "openai-responses":  # the Responses text carries no numbers
            assert info.value.limit_tokens == 50
            assert info.value.reported_tokens is not None
            assert info.value.reported_tokens > 200


async def test_anthropic_output_reserve_overflow_is_fixable() -> None:
    with FakeServer(["x"], window=300, count_output_reserve=True) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, "anthropic-messages", client)
            with pytest.raises(ContextLengthError) as info:
                await collect(provider.stream(request([user_text("hello")])))
    assert info.value.fixable_by_output_reserve
    assert info.value.requested_output_tokens == 4096


@pytest.mark.parametrize(
    ("form", "fixable"),
    [
        ("openai", False),
        ("vllm", True),
        ("vllm_plus", True),
        ("vllm_too_large", True),
        ("llamacpp", False),
        ("deepseek", True),
        ("gemini", False),
    ],
)
async def test_chat_endpoint_overflow_forms(form, fixable) -> None:
    turn = {"error": "context_length", "error_form": form}
    with FakeServer([turn], window=10_000) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, "openai-chat", client)
            with pytest.raises(ContextLengthError) as info:
                await collect(provider.stream(request([user_text("hi")])))
    assert info.value.limit_tokens == 10_000
    assert info.value.fixable_by_output_reserve is fixable


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("mid_event", [False, True])
async def test_cut_stream_is_a_network_error(wire, mid_event) -> None:
    turn = {"text": "a long answer " * 5, "cut_after_events": 3, "cut_mid_event": mid_event}
    with FakeServer([turn]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, wire, client)
            with pytest.raises(NetworkError, match="ended early"):
                await collect(provider.stream(request([user_text("hi")])))


@pytest.mark.parametrize("wire", WIRES)
async def test_error_inside_the_stream(wire) -> None:
    turn = {"error": "overloaded", "error_in_stream": True}
    with FakeServer([turn]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, wire, client)
            with pytest.raises(OverloadedError):
                await collect(provider.stream(request([user_text("hi")])))


@pytest.mark.parametrize("wire", WIRES)
async def test_rate_limit_retry_honours_retry_after(wire) -> None:
    sleeps: list[float] = []

    async def record(delay: float) -> None:
        sleeps.append(delay)

    with FakeServer([{"error": "rate_limit", "retry_after": 3}, "after the wait"]) as server:
        async with httpx2.AsyncClient() as client:
            inner = provider_for(server, wire, client)
            provider = RetryingProvider(inner, 2, sleep=record, jitter=lambda: 0.0)
            reply = await collect(provider.stream(request([user_text("hi")])))
    assert reply.message.text == "after the wait"
    assert sleeps == [3.0]


async def test_unexpected_request_is_a_clear_500_and_not_retried() -> None:
    with FakeServer(["only one"]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, "openai-chat", client, max_retries=3)
            await collect(provider.stream(request([user_text("1")])))
            with pytest.raises(OverloadedError, match="unexpected request 2") as info:
                await collect(provider.stream(request([user_text("2")])))
    assert not info.value.retryable
    assert server.stats().unexpected_requests == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_api_key_echoed_by_the_server_never_reaches_the_error(wire) -> None:
    key = "sk-live-0123456789abcdef"
    with FakeServer([{"error": "auth"}]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, wire, client, api_key=key)
            with pytest.raises(AuthError) as info:
                await collect(provider.stream(request([user_text("hi")])))
            assert key not in repr(provider)
            assert key.encode() not in provider.encode(request([user_text("hi")]))
        assert key in json.dumps(server.received[0].headers)  # it was sent, as it must be
    error = info.value
    assert key not in str(error)
    assert key not in (error.raw or "")
    assert key not in repr(error.args)


async def test_quota_429_is_not_retried() -> None:
    with FakeServer([{"error": "quota"}]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, "openai-responses", client, max_retries=3)
            with pytest.raises(RateLimitError) as info:
                await collect(provider.stream(request([user_text("hi")])))
    assert not info.value.retryable
    assert server.stats().requests == 1


async def test_slow_stream_still_completes() -> None:
    turn = {"text": "slow but steady", "chunk_chars": 4, "delay_s": 0.01}
    with FakeServer([turn]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, "anthropic-messages", client)
            seen: list[object] = []
            reply = await collect(provider.stream(request([user_text("hi")])), on_event=seen.append)
    assert reply.message.text == "slow but steady"
    assert len(seen) >= 6


@pytest.mark.parametrize("wire", WIRES)
async def test_cancelling_a_stalled_stream_closes_its_connection_at_once(wire) -> None:
    turn = {"text": "the first words, then a very long silence", "chunk_chars": 8}
    stalled = {**turn, "stall_after_events": 4, "stall_s": 60}
    with FakeServer([stalled, turn]) as server:
        async with httpx2.AsyncClient() as client:
            provider = provider_for(server, wire, client)
            first_text = asyncio.Event()
            cancelled = asyncio.create_task(
                collect(
                    provider.stream(request([user_text("hi")])),
                    on_event=lambda e: first_text.set() if isinstance(e, TextDelta) else None,
                )
            )
            await asyncio.wait_for(first_text.wait(), 10)
            assert server.stats().abandoned_streams == 0
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            for _ in range(250):  # the server counts it from its own thread: wait up to 5 s
                if server.stats().abandoned_streams:
                    break
                await asyncio.sleep(0.02)
            abandoned = server.stats().abandoned_streams
            # The same client goes on: the next stream is whole and not abandoned.
            reply = await collect(provider.stream(request([user_text("again")])))
            after = server.stats()
    assert abandoned == 1
    assert reply.message.text == turn["text"]
    assert (after.abandoned_streams, after.served) == (1, 2)


async def test_anthropic_cumulative_usage_from_the_fake() -> None:
    turn = {
        "text": "ok",
        "usage": {
            "input_tokens": 500,
            "cached_tokens": 300,
            "cache_write_tokens": 100,
            "output_tokens": 42,
        },
        "usage_updates": 3,
    }
    with FakeServer([turn]) as server:
        async with httpx2.AsyncClient() as client:
            reply = await collect(
                provider_for(server, "anthropic-messages", client).stream(
                    request([user_text("hi")])
                )
            )
    assert (
        reply.usage.new_input,
        reply.usage.cache_read,
        reply.usage.cache_write,
        reply.usage.output,
    ) == (100, 300, 100, 42)


async def test_invalid_tool_arguments_become_typed_events() -> None:
    turn = {"tool_calls": [{"id": "c1", "name": "shell", "raw_arguments": '{"cmd": '}]}
    with FakeServer([turn]) as server:
        async with httpx2.AsyncClient() as client:
            reply = await collect(
                provider_for(server, "openai-chat", client).stream(request([user_text("hi")]))
            )
    assert reply.tool_calls == ()  # nothing runnable; the call stays in the message, typed
    assert [c.invalid is not None for c in reply.message.tool_calls] == [True]
    assert [(c.call_id, c.raw_arguments) for c in reply.invalid_calls] == [("c1", '{"cmd": ')]


@pytest.mark.slow
def test_separate_process_writes_its_port_and_serves_stats(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": ["hello"], "window": 5000}), encoding="utf-8")
    port_file = tmp_path / "port"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "comal.testing.fake_server",
            "--script",
            str(script),
            "--port-file",
            str(port_file),
        ],
        env=env,
    )
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            assert proc.poll() is None, "fake server exited early"
            assert time.monotonic() < deadline, "no port file"
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port_file.read_text()}"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        with httpx2.Client() as client:
            streamed = client.post(f"{base}/v1/chat/completions", json=body).text
            stats = client.get(f"{base}/_fake/stats").json()
            received = client.get(f"{base}/_fake/requests").json()
        assert "hello" in streamed
        assert streamed.rstrip().endswith("data: [DONE]")
        assert stats["requests"] == 1
        assert stats["served"] == 1
        assert stats["unexpected_requests"] == 0
        assert received == [body]
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_user_text_alone_is_never_an_orphan() -> None:
    from comal.testing.fake_checks import check_anthropic, check_chat, check_responses

    assert (
        check_chat(
            {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}
        )
        == []
    )
    assert check_chat(
        {"messages": [{"role": "user", "content": "u"}, {"role": "system", "content": "s"}]}
    )
    assert check_responses(
        {
            "input": [
                {"role": "user", "content": "u"},
                {"type": "function_call_output", "call_id": "x", "output": ""},
            ]
        }
    )
    dup: JSONObject = {
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "a", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": ""}],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "a", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": ""},
                    {"type": "text", "text": "x"},
                ],
            },
        ]
    }
    assert check_anthropic(dup) == ["duplicate tool call id t"]


def test_a_system_message_after_the_conversation_is_a_violation_on_both_openai_wires() -> None:
    from comal.testing.fake_checks import check_chat, check_responses

    late: list[JSONValue] = [
        {"role": "user", "content": "u"},
        {"role": "developer", "content": "d"},
    ]
    assert check_chat({"messages": late}) == [
        "messages.[1]: system message after the conversation started"
    ]
    assert check_responses({"input": late}) == [
        "input[1]: system message after the conversation started"
    ]
    first: list[JSONValue] = [
        {"role": "developer", "content": "d"},
        {"role": "user", "content": "u"},
    ]
    assert check_chat({"messages": first}) == []
    assert check_responses({"input": first}) == []


def test_chat_null_assistant_content_is_a_violation() -> None:
    from comal.testing.fake_checks import check_chat

    call: JSONObject = {"id": "c", "type": "function", "function": {"name": "a", "arguments": "{}"}}
    tools: list[JSONValue] = [{"type": "function", "function": {"name": "a", "parameters": {}}}]
    messages: list[JSONValue] = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]
    assert check_chat({"messages": messages, "tools": tools}) == [
        "messages.[1].content: Input should be a valid string"
    ]
    fixed = [*messages[:1], {**_obj(messages[1]), "content": ""}, *messages[2:]]
    assert check_chat({"messages": fixed, "tools": tools, "tool_choice": "auto"}) == []


def _obj(value: JSONValue) -> JSONObject:
    assert isinstance(value, dict)
    return value
