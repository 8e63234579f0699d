"""Recorded SSE streams decode to exact event lists, with exact normalized usage."""

from __future__ import annotations

import pytest

from comal.errors import ContextLengthError, OverloadedError
from comal.messages import Finish, ReasoningPart, ToolCallPart
from comal.providers import anthropic_messages, openai_chat, openai_responses
from comal.providers.base import (
    Completed,
    ReasoningDelta,
    TextDelta,
    ToolCallDone,
    ToolCallInvalid,
    UsageReport,
)
from comal.usage import Usage
from tests.protocol.sse_fixtures import sse_lines


def test_openai_chat_parallel_tool_calls() -> None:
    events = list(
        openai_chat.decode_stream(sse_lines("openai_chat_parallel_tools"), model="gpt-4o")
    )
    assert events[:2] == [
        ToolCallDone(ToolCallPart("call_abc", "shell", {"cmd": "ls -la"})),
        ToolCallDone(ToolCallPart("call_def", "read_file", {"path": "src/app.py"})),
    ]
    usage = events[2]
    assert isinstance(usage, UsageReport)
    assert usage.usage == Usage(
        new_input=176, cache_read=1024, cache_write=None, output=40, reasoning=0
    )
    assert usage.raw["prompt_tokens"] == 1200
    assert events[3:] == [Completed(Finish.TOOL_CALLS, "tool_calls")]


def test_openai_chat_text_cut_by_length_with_cache_write() -> None:
    events = list(openai_chat.decode_stream(sse_lines("openai_chat_text_length"), model="m"))
    assert events == [
        TextDelta("Hel"),
        TextDelta("lo, wor"),
        UsageReport(
            Usage(new_input=388, cache_read=0, cache_write=512, output=3, reasoning=0),
            {
                "prompt_tokens": 900,
                "completion_tokens": 3,
                "total_tokens": 903,
                "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 512},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
        ),
        Completed(Finish.LENGTH, "length"),
    ]


def test_ollama_tool_call_with_stop_finish_and_bare_usage() -> None:
    events = list(openai_chat.decode_stream(sse_lines("ollama_chat_tool_stop"), model="q"))
    assert events == [
        TextDelta("Let me look."),
        ToolCallDone(ToolCallPart("call_w2fsk1mq", "shell", {"cmd": "pytest -q"})),
        UsageReport(
            Usage(new_input=2048, cache_read=None, cache_write=None, output=25, reasoning=None),
            {"prompt_tokens": 2048, "completion_tokens": 25, "total_tokens": 2073},
        ),
        # Ollama says "stop" while calling tools; the normalized finish says what happened.
        Completed(Finish.TOOL_CALLS, "stop"),
    ]


def test_deepseek_reasoning_content_kept_for_the_same_model() -> None:
    events = list(
        openai_chat.decode_stream(sse_lines("deepseek_reasoning"), model="deepseek-reasoner")
    )
    assert events[:4] == [
        ReasoningDelta("The user wants"),
        ReasoningDelta(" a greeting."),
        ReasoningDelta(
            "",
            ReasoningPart("openai-chat", "deepseek-reasoner", text="The user wants a greeting."),
        ),
        TextDelta("Hi!"),
    ]
    usage = events[4]
    assert isinstance(usage, UsageReport)
    assert usage.usage == Usage(
        new_input=64, cache_read=0, cache_write=None, output=20, reasoning=17
    )
    assert events[5] == Completed(Finish.STOP, "stop")


def test_anthropic_thinking_text_and_tool_use() -> None:
    events = list(
        anthropic_messages.decode_stream(
            sse_lines("anthropic_thinking_tool_use"), model="claude-sonnet-4-5"
        )
    )
    signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    assert events[:5] == [
        ReasoningDelta("I should list"),
        ReasoningDelta(" the files first."),
        ReasoningDelta(
            "",
            ReasoningPart(
                "anthropic-messages",
                "claude-sonnet-4-5",
                text="I should list the files first.",
                signature=signature,
            ),
        ),
        TextDelta("Listing files."),
        ToolCallDone(ToolCallPart("toolu_01A", "shell", {"cmd": "ls"})),
    ]
    invalid = events[5]
    assert isinstance(invalid, ToolCallInvalid)
    assert (invalid.call_id, invalid.name, invalid.raw_arguments) == (
        "toolu_01B",
        "read_file",
        '{"path": ',
    )
    assert "not valid JSON" in invalid.error
    usage = events[6]
    assert isinstance(usage, UsageReport)
    assert usage.usage == Usage(new_input=12, cache_read=30000, cache_write=2000, output=87)
    assert usage.usage.total_input == 32012
    assert events[7:] == [Completed(Finish.TOOL_CALLS, "tool_use")]


def test_anthropic_cumulative_usage_takes_latest_not_sum() -> None:
    events = list(
        anthropic_messages.decode_stream(
            sse_lines("anthropic_cumulative_max_tokens"), model="claude-opus-4-5"
        )
    )
    assert events[0] == ReasoningDelta(
        "",
        ReasoningPart(
            "anthropic-messages",
            "claude-opus-4-5",
            redacted_data="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
        ),
    )
    assert events[1] == TextDelta("The answer is")
    usage = events[2]
    assert isinstance(usage, UsageReport)
    # 7, not 3 + 7: message_delta usage is cumulative. A null in the delta keeps the known 0.
    assert usage.usage == Usage(new_input=40, cache_read=1000, cache_write=0, output=7)
    assert events[3] == Completed(Finish.LENGTH, "max_tokens")


def test_anthropic_overloaded_error_event_mid_stream() -> None:
    with pytest.raises(OverloadedError, match="Overloaded") as info:
        list(anthropic_messages.decode_stream(sse_lines("anthropic_overloaded_midstream")))
    assert info.value.retryable


def test_responses_reasoning_text_and_function_call() -> None:
    events = list(
        openai_responses.decode_stream(sse_lines("responses_reasoning_call"), model="gpt-5")
    )
    assert events[:6] == [
        ReasoningDelta("**Planning** "),
        ReasoningDelta("run the tests"),
        ReasoningDelta(
            "",
            ReasoningPart(
                "openai-responses",
                "gpt-5",
                text="**Planning** run the tests",
                encrypted_content="gAAAAABoX1ENCRYPTED",
                item_id="rs_1",
            ),
        ),
        TextDelta("Running tests."),
        ToolCallDone(ToolCallPart("call_Xy1", "shell", {"cmd": "pytest"})),
        UsageReport(
            Usage(new_input=904, cache_read=4096, cache_write=None, output=300, reasoning=256),
            {
                "input_tokens": 5000,
                "input_tokens_details": {"cached_tokens": 4096},
                "output_tokens": 300,
                "output_tokens_details": {"reasoning_tokens": 256},
                "total_tokens": 5300,
            },
        ),
    ]
    assert events[6:] == [Completed(Finish.TOOL_CALLS, "completed")]


def test_responses_incomplete_is_output_length() -> None:
    events = list(openai_responses.decode_stream(sse_lines("responses_incomplete"), model="m"))
    assert events[0] == TextDelta("Partial")
    usage = events[1]
    assert isinstance(usage, UsageReport)
    assert usage.usage == Usage(
        new_input=388, cache_read=512, cache_write=0, output=64, reasoning=64
    )
    assert events[2] == Completed(Finish.LENGTH, "incomplete:max_output_tokens")


def test_responses_overflow_error_event() -> None:
    with pytest.raises(ContextLengthError) as info:
        list(openai_responses.decode_stream(sse_lines("responses_overflow_event")))
    assert not info.value.retryable
    assert "context window" in info.value.message
