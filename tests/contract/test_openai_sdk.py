"""The official `openai` SDK against the fake server: proof that the fake speaks the real wire."""

from __future__ import annotations

import openai
import pytest

from comal.testing.fake_server import FakeServer

TOOL_TURN = {
    "text": "Running.",
    "tool_calls": [
        {"id": "call_1", "name": "shell", "arguments": {"cmd": "ls"}},
        {"id": "call_2", "name": "read_file", "arguments": {"path": "a.py"}},
    ],
    "usage": {
        "input_tokens": 1200,
        "cached_tokens": 1024,
        "output_tokens": 30,
        "reasoning_tokens": 5,
    },
}


def client_for(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)


def test_chat_stream_with_usage_chunk() -> None:
    with FakeServer(
        [{"text": "Hello there, friend.", "usage": {"input_tokens": 20, "output_tokens": 5}}]
    ) as server:
        client = client_for(server)
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello there, friend."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (20, 5)


def test_chat_stream_helper_accumulates_parallel_tool_calls() -> None:
    with FakeServer([TOOL_TURN]) as server:
        client = client_for(server)
        with client.chat.completions.stream(
            model="gpt-4o",
            messages=[{"role": "user", "content": "go"}],
            stream_options={"include_usage": True},
        ) as stream:
            final = stream.get_final_completion()
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert message.content == "Running."
    calls = message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_1", "shell", '{"cmd": "ls"}'),
        ("call_2", "read_file", '{"path": "a.py"}'),
    ]
    assert final.usage is not None
    assert final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == 1024


def test_chat_non_streamed() -> None:
    with FakeServer(["plain"]) as server:
        reply = client_for(server).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.choices[0].message.content == "plain"
    assert reply.usage is not None
    assert reply.usage.total_tokens > 0


def test_chat_context_length_exceeded_is_a_typed_400() -> None:
    with FakeServer(["unused"], window=20) as server, pytest.raises(openai.BadRequestError) as info:
        client_for(server).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "word " * 100}], stream=True
        )
    assert info.value.code == "context_length_exceeded"
    assert "maximum context length is 20 tokens" in info.value.message


def test_chat_rate_limit_429_with_retry_after() -> None:
    with (
        FakeServer([{"error": "rate_limit", "retry_after": 2}]) as server,
        pytest.raises(openai.RateLimitError) as info,
    ):
        client_for(server).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "2"


def test_responses_stream_with_reasoning_and_function_calls() -> None:
    turn = {**TOOL_TURN, "reasoning": "Think first."}
    with FakeServer([turn]) as server:
        client = client_for(server)
        with client.responses.stream(
            model="gpt-5",
            input="go",
            include=["reasoning.encrypted_content"],
            store=False,
        ) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_response()
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert "response.reasoning_summary_text.delta" in kinds
    assert [item.type for item in final.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    reasoning = final.output[0]
    assert reasoning.type == "reasoning"
    assert reasoning.encrypted_content
    assert final.output_text == "Running."
    assert final.usage is not None
    assert final.usage.input_tokens_details.cached_tokens == 1024
    assert final.usage.output_tokens_details.reasoning_tokens == 5


def test_responses_incomplete_max_output_tokens() -> None:
    with FakeServer([{"text": "cut", "finish": "length"}]) as server:
        response = client_for(server).responses.create(model="gpt-5", input="hi")
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


def test_responses_error_event_mid_stream() -> None:
    turn = {"error": "context_length", "error_in_stream": True}
    with FakeServer([turn]) as server:
        stream = client_for(server).responses.create(model="gpt-5", input="hi", stream=True)
        with pytest.raises(openai.APIError) as info:
            list(stream)
    assert info.value.code == "context_length_exceeded"


def test_responses_overflow_400() -> None:
    with FakeServer(["unused"], window=10) as server, pytest.raises(openai.BadRequestError) as info:
        client_for(server).responses.create(model="gpt-5", input="word " * 50, stream=True)
    assert info.value.code == "context_length_exceeded"
    assert isinstance(info.value.body, dict)
    assert info.value.body.get("param") == "input"
