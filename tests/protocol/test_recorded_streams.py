"""Real recorded streams decode to what the official SDKs' own tests expect of them.

Chat Completions: `../shared/recorded-streams/openai-python/` (gpt-4o, replayed by openai-python's
`tests/lib/chat/test_completions_streaming.py`; each case names its test). Messages: the
`anthropic` sdist's fixtures, copied into `recorded/anthropic-sdk/` (see the README there).
The SDK assertions are restated in Comal's terms: text, tool calls, finish, usage, refusal.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from comal.messages import JSONObject
from comal.providers import anthropic_messages, openai_chat
from comal.providers.base import ProviderEvent
from comal.providers.reply import Reply, collect

OPENAI_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "recorded-streams"
OPENAI_DIR = OPENAI_DIR.resolve() / "openai-python"
ANTHROPIC_DIR = Path(__file__).parent / "recorded" / "anthropic-sdk"


@dataclass(frozen=True)
class Expect:
    """What the SDK's test asserts, in Comal's terms."""

    finish: str
    text: str = ""
    refusal: str = ""
    calls: tuple[tuple[str, JSONObject], ...] = ()
    invalid: tuple[str, ...] = ()
    """Names of calls whose arguments are not JSON (kept, never run)."""
    usage: tuple[int, int] | None = None
    """(new input tokens, output tokens)."""
    extra: dict[str, object] = field(default_factory=dict)


WEATHER_JSON = (
    '\n  {\n    "location": "San Francisco, CA",\n    "weather": {\n      "temperature": "18°C",\n'
    '      "condition": "Partly Cloudy",\n      "humidity": "72%",\n      "windSpeed": "15 km/h",\n'
    '      "windDirection": "NW"\n    },\n    "forecast": [\n      {\n        "day": "Monday",\n'
    '        "high": "20°C",\n        "low": "14°C",\n        "condition": "Sunny"\n      },\n'
    '      {\n        "day": "Tuesday",\n        "high": "19°C",\n        "low": "15°C",\n'
    '        "condition": "Mostly Cloudy"\n      },\n      {\n        "day": "Wednesday",\n'
    '        "high": "18°C",\n        "low": "14°C",\n        "condition": "Cloudy"\n      }\n'
    "    ]\n  }\n"
)

OPENAI_CASES = {
    # test_parse_nothing
    "e2aad469b71d": Expect(
        "stop",
        "I'm unable to provide real-time weather updates. To get the current weather in San"
        " Francisco, I recommend checking a reliable weather website or a weather app.",
    ),
    # test_parse_pydantic_model (usage: prompt 79, completion 14)
    "7e5ea4d12e7c": Expect(
        "stop", '{"city":"San Francisco","temperature":61,"units":"f"}', usage=(79, 14)
    ),
    # test_parse_pydantic_model_multiple_choices (n=3): choice 0 only
    "a491adda08c3": Expect("stop", '{"city":"San Francisco","temperature":65,"units":"f"}'),
    # test_parse_max_tokens_reached: the SDK raises LengthFinishReasonError
    "4cc50a6135d2": Expect("length", '{"'),
    # test_parse_pydantic_model_refusal
    "173417d55340": Expect(
        "refusal",
        "I'm sorry, I can't assist with that request.",
        refusal="I'm sorry, I can't assist with that request.",
    ),
    # test_content_logprobs_events
    "83b060bae42e": Expect("stop", "Foo!"),
    # test_refusal_logprobs_events
    "569c877e6942": Expect(
        "refusal",
        "I'm very sorry, but I can't assist with that.",
        refusal="I'm very sorry, but I can't assist with that.",
    ),
    # test_parse_pydantic_tool
    "c6aa7e397b71": Expect(
        "tool_calls",
        calls=(("GetWeatherArgs", {"city": "Edinburgh", "country": "UK", "units": "c"}),),
    ),
    # test_parse_multiple_pydantic_tools
    "f82268f2fefd": Expect(
        "tool_calls",
        calls=(
            ("GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
            ("get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
        ),
    ),
    # test_parse_strict_tools
    "a247c49c5fcd": Expect(
        "tool_calls", calls=(("get_weather", {"city": "San Francisco", "state": "CA"}),)
    ),
    # test_non_pydantic_response_format
    "d61558011839": Expect("stop", WEATHER_JSON),
    # test_allows_non_strict_tools_but_no_parsing
    "2018feb66ae1": Expect("tool_calls", calls=(("get_weather", {"city": "New York City"}),)),
}

HELLO = "Hello there!"
REFUSED_BY_POLICY = "cyber: This request was refused due to policy."
ANTHROPIC_CASES = {
    # test_messages.py / test_beta_messages.py
    "basic_response.txt": Expect("stop", HELLO, usage=(11, 6)),
    "unknown_events_response.txt": Expect("stop", HELLO, usage=(11, 6)),
    "compaction_response.txt": Expect("stop", HELLO, usage=(30, 8)),
    "context_management_response.txt": Expect("stop", HELLO),
    "fallback_response.txt": Expect("stop", HELLO),
    "fallback_credit_response.txt": Expect("stop", HELLO, usage=(25, 8)),
    "input_transformations_delta_response.txt": Expect("stop", HELLO),
    "input_transformations_empty_delta_response.txt": Expect("stop", HELLO),
    "input_transformations_start_only_response.txt": Expect("stop", HELLO),
    "message_delta_fields_response.txt": Expect(
        "stop", HELLO, usage=(40, 8), extra={"cache_read": 7, "cache_write": 12, "reasoning": 3}
    ),
    "message_delta_omitted_usage_response.txt": Expect(
        "stop", HELLO, usage=(25, 8), extra={"cache_read": 5, "cache_write": 10}
    ),
    "refusal_response.txt": Expect("refusal", extra={"reason": REFUSED_BY_POLICY}),
    "tool_use_response.txt": Expect(
        "tool_calls",
        "I'll check the current weather in Paris for you.",
        calls=(("get_weather", {"location": "Paris"}),),
        usage=(377, 65),
    ),
    # The SDK raises on the invalid JSON; Comal keeps the call aside and never runs it.
    "tool_use_invalid_json_response.txt": Expect(
        "tool_calls", "I'll check the current weather in Paris for you.", invalid=("get_weather",)
    ),
    # max_tokens mid tool input: the SDK keeps a partial input; Comal's is not JSON, so kept
    # aside (and the loop discards the whole OUTPUT_LENGTH response).
    "incomplete_partial_json_response.txt": Expect(
        "length",
        "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a"
        " file called taxes.txt. Let me do that for you now.",
        invalid=("make_file",),
        usage=(450, 124),
    ),
    # A server tool (web search) is the server's own: no client call to run.
    "server_tool_use_response.txt": Expect(
        "stop",
        "Claude Opus 4.7 is now generally available with improvements in software engineering"
        " and vision capabilities.",
    ),
    # test_refusal_fallback_streaming.py: A refuses after partial text (a prefill claim)
    "stream-a-refusal.sse": Expect("refusal", "Hi", extra={"reason": ""}),
    "stream-a-toolrefusal.sse": Expect(
        "refusal", "Here's a summary of this year's solar eclipses and how", extra={"reason": ""}
    ),
    "stream-b-fallback.sse": Expect("stop", extra={"starts": " there! Happy to explain."}),
}


async def _events(events: Iterable[ProviderEvent]) -> AsyncIterator[ProviderEvent]:
    for event in events:
        yield event


def _decode(decode: Callable[..., Iterator[ProviderEvent]], path: Path) -> Reply:
    lines = path.read_text(encoding="utf-8").splitlines()
    return asyncio.run(collect(_events(decode(lines, model="recorded"))))


def _check(reply: Reply, want: Expect) -> None:
    assert reply.finish == want.finish
    if "starts" in want.extra:
        assert reply.message.text.startswith(str(want.extra["starts"]))
    else:
        assert reply.message.text == want.text
    assert reply.refusal == want.refusal
    assert [(c.name, c.arguments) for c in reply.tool_calls] == list(want.calls)
    assert [c.name for c in reply.invalid_calls] == list(want.invalid)
    if want.usage is not None:
        assert (reply.usage.new_input, reply.usage.output) == want.usage
    for key in ("cache_read", "cache_write", "reasoning"):
        if key in want.extra:
            assert getattr(reply.usage, key) == want.extra[key]
    if "reason" in want.extra:
        assert reply.refusal_reason() == want.extra["reason"]
    if reply.refused:
        # Nothing of a refusal is reported as an answer without saying so.
        assert reply.refusal_text() == (want.refusal or want.text)


def _openai_file(prefix: str) -> Path:
    found = sorted(OPENAI_DIR.glob(f"{prefix}*.bin"))
    assert len(found) == 1, f"{prefix}*.bin not in {OPENAI_DIR}"
    return found[0]


@pytest.mark.parametrize("prefix", sorted(OPENAI_CASES))
def test_openai_sdk_recorded_chat_streams(prefix: str) -> None:
    reply = _decode(openai_chat.decode_stream, _openai_file(prefix))
    _check(reply, OPENAI_CASES[prefix])


def test_every_recorded_chat_stream_has_an_expectation() -> None:
    names = {p.name[:12] for p in OPENAI_DIR.glob("*.bin")}
    assert names == set(OPENAI_CASES)


@pytest.mark.parametrize("name", sorted(ANTHROPIC_CASES))
def test_anthropic_sdk_recorded_message_streams(name: str) -> None:
    reply = _decode(anthropic_messages.decode_stream, ANTHROPIC_DIR / name)
    _check(reply, ANTHROPIC_CASES[name])


def test_every_anthropic_fixture_has_an_expectation() -> None:
    names = {p.name for p in ANTHROPIC_DIR.iterdir() if p.suffix in (".txt", ".sse")}
    assert names == set(ANTHROPIC_CASES)
