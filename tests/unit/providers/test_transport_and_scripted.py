"""The retry wrapper's rules, the scripted provider, and `collect`."""

from __future__ import annotations

import pytest

from comal.errors import (
    AuthError,
    ContextLengthError,
    NetworkError,
    OverloadedError,
    RateLimitError,
    ScriptExhaustedError,
)
from comal.messages import (
    Finish,
    InvalidArguments,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    user_text,
)
from comal.providers.base import (
    Completed,
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallDone,
    ToolCallInvalid,
    UsageReport,
)
from comal.providers.reply import collect
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.providers.transport import RetryingProvider
from comal.usage import Usage

REQ = ModelRequest("scripted-model", "sys", (user_text("hi"),))


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def test_retries_retryable_errors_with_backoff_then_succeeds() -> None:
    inner = ScriptedProvider([NetworkError("reset"), OverloadedError("busy"), "done"])
    sleeps = Sleeps()
    provider = RetryingProvider(inner, 4, sleep=sleeps, jitter=lambda: 1.0, base_delay_s=1.0)
    reply = await collect(provider.stream(REQ))
    assert reply.message.text == "done"
    assert sleeps.delays == [1.0, 2.0]  # exponential; jitter 1.0 gives the full step
    assert len(inner.requests) == 3


async def test_jitter_stays_within_half_to_full_step() -> None:
    sleeps = Sleeps()
    provider = RetryingProvider(
        ScriptedProvider([NetworkError("x"), "ok"]), 1, sleep=sleeps, jitter=lambda: 0.0
    )
    await collect(provider.stream(REQ))
    assert sleeps.delays == [0.5]


async def test_retry_after_is_honoured_and_overlong_waits_give_up() -> None:
    sleeps = Sleeps()
    provider = RetryingProvider(
        ScriptedProvider([RateLimitError("slow", retry_after=12.0), "ok"]),
        3,
        sleep=sleeps,
        jitter=lambda: 0.0,
    )
    await collect(provider.stream(REQ))
    assert sleeps.delays == [12.0]
    too_long = RetryingProvider(
        ScriptedProvider([RateLimitError("slow", retry_after=3600.0), "ok"]), 3, sleep=Sleeps()
    )
    with pytest.raises(RateLimitError):
        await collect(too_long.stream(REQ))


@pytest.mark.parametrize(
    "error",
    [ContextLengthError("too long"), AuthError("no key"), RateLimitError("quota")],
)
async def test_non_retryable_errors_are_raised_at_once(error) -> None:
    if isinstance(error, RateLimitError):
        error.retryable = False
    inner = ScriptedProvider([error, "never"])
    sleeps = Sleeps()
    with pytest.raises(type(error)):
        await collect(RetryingProvider(inner, 5, sleep=sleeps).stream(REQ))
    assert sleeps.delays == []
    assert len(inner.requests) == 1


async def test_context_length_never_retried_even_if_marked_retryable() -> None:
    error = ContextLengthError("too long")
    error.retryable = True
    inner = ScriptedProvider([error, "never"])
    with pytest.raises(ContextLengthError):
        await collect(RetryingProvider(inner, 5, sleep=Sleeps()).stream(REQ))
    assert len(inner.requests) == 1


async def test_no_retry_once_events_were_yielded() -> None:
    turn = ScriptedTurn(text="partial", error=NetworkError("cut"), error_after_events=True)
    inner = ScriptedProvider([turn, "second"])
    seen: list[ProviderEvent] = []
    with pytest.raises(NetworkError):
        await collect(RetryingProvider(inner, 3, sleep=Sleeps()).stream(REQ), on_event=seen.append)
    assert seen == [TextDelta("partial")]
    assert len(inner.requests) == 1


async def test_gives_up_after_max_retries() -> None:
    inner = ScriptedProvider([NetworkError("a"), NetworkError("b"), NetworkError("c")])
    with pytest.raises(NetworkError, match="b"):
        await collect(RetryingProvider(inner, 1, sleep=Sleeps()).stream(REQ))
    assert len(inner.requests) == 2


async def test_scripted_provider_records_requests_and_exhausts_clearly() -> None:
    usage = Usage(new_input=10, cache_read=0, cache_write=0, output=3)
    call = ToolCallPart("c1", "shell", {"cmd": "ls"})
    provider = ScriptedProvider(
        [ScriptedTurn(text="Listing.", reasoning="plan", tool_calls=(call,), usage=usage)]
    )
    reply = await collect(provider.stream(REQ))
    assert reply.message.parts == (
        ReasoningPart("openai-chat", "scripted-model", text="plan"),
        TextPart("Listing."),
        call,
    )
    assert (reply.finish, reply.usage) == ("tool_calls", usage)
    assert provider.requests == [REQ]
    with pytest.raises(ScriptExhaustedError, match="1 turn"):
        await collect(provider.stream(REQ))
    assert provider.encode(REQ) == provider.encode(REQ)


async def _events(*events: ProviderEvent):
    for event in events:
        yield event


async def test_collect_keeps_stream_order_with_invalid_calls_typed_in_place() -> None:
    part = ReasoningPart("anthropic-messages", "m", text="ab", signature="s")
    bad = ToolCallInvalid("c2", "read", "{", "not JSON")
    reply = await collect(
        _events(
            TextDelta("Hi "),
            TextDelta("there"),
            ReasoningDelta("a"),
            ReasoningDelta("b"),
            ReasoningDelta("", part),
            ToolCallDone(ToolCallPart("c1", "shell", {})),
            bad,
            TextDelta("after"),
            UsageReport(Usage(output=1), {"n": 1}),
            UsageReport(Usage(output=2), {"n": 2}),
            Completed(Finish.TOOL_CALLS, "tool_use"),
        )
    )
    assert reply.message.parts == (
        TextPart("Hi there"),
        part,
        ToolCallPart("c1", "shell", {}),
        ToolCallPart("c2", "read", {}, InvalidArguments("{", "not JSON")),
        TextPart("after"),
    )
    assert reply.invalid_calls == (bad,)
    assert reply.tool_calls == (ToolCallPart("c1", "shell", {}),)
    assert (reply.usage, reply.usage_raw) == (Usage(output=2), {"n": 2})
    assert (reply.finish, reply.raw_finish) == ("tool_calls", "tool_use")


async def test_collect_without_completion_is_a_network_error() -> None:
    with pytest.raises(NetworkError, match="ended early"):
        await collect(_events(TextDelta("half")))
