"""Hostile SSE streams (cuts, garbage, reordering) never let anything but ComalError escape.

Decoders must handle hostile input on purpose: the guard in `sse.drive` that wraps unexpected
exceptions ("malformed stream: …") must never be what catches them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.errors import ComalError
from comal.providers import anthropic_messages, openai_chat, openai_responses
from comal.providers.base import Completed, ProviderEvent
from comal.providers.sse import iter_sse
from tests.protocol.sse_fixtures import SSE_DIR, sse_lines

Decoder = Callable[[Iterable[str]], Iterator[ProviderEvent]]
DECODERS: list[tuple[str, Decoder]] = [
    ("openai_chat", lambda lines: openai_chat.decode_stream(lines, model="m")),
    ("ollama_chat", lambda lines: openai_chat.decode_stream(lines, model="m")),
    ("deepseek", lambda lines: openai_chat.decode_stream(lines, model="m")),
    ("anthropic", lambda lines: anthropic_messages.decode_stream(lines, model="m")),
    ("responses", lambda lines: openai_responses.decode_stream(lines, model="m")),
]
FIXTURES = {
    "openai_chat": ["openai_chat_parallel_tools", "openai_chat_text_length"],
    "ollama_chat": ["ollama_chat_tool_stop"],
    "deepseek": ["deepseek_reasoning"],
    "anthropic": ["anthropic_thinking_tool_use", "anthropic_cumulative_max_tokens"],
    "responses": ["responses_reasoning_call", "responses_incomplete"],
}
CASES = [(decoder, fixture) for name, decoder in DECODERS for fixture in FIXTURES[name]]

GARBAGE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "data: {",
            "data: []",
            "data: null",
            "data: 12",
            'data: {"choices": "x"}',
            'data: {"choices": [{"delta": {"tool_calls": [{"index": "a"}]}}]}',
            'data: {"type": "content_block_delta", "index": 9, "delta": {"type": "text_delta"}}',
            'data: {"type": "content_block_start", "index": 0, "content_block": []}',
            'data: {"type": "response.output_item.done", "item": {"type": "function_call"}}',
            'data: {"type": "response.completed", "response": {"usage": {"input_tokens": "x"}}}',
            'data: {"type": "message_delta", "usage": {"output_tokens": true}}',
            "event: error",
            "data: [DONE]",
            "",
            ": comment",
            "data: " + "[" * 5000,
        ]
    ),
)


def _run(decoder: Decoder, lines: list[str]) -> None:
    failure: ComalError | None = None
    events: list[ProviderEvent] = []
    try:
        events = list(decoder(lines))
    except ComalError as exc:
        failure = exc
    if failure is not None:
        assert not failure.message.startswith("malformed stream:"), failure.message
        return
    assert events, "a stream that decodes must end with Completed"
    assert isinstance(events[-1], Completed)
    assert sum(isinstance(e, Completed) for e in events) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), data=st.data())
def test_random_cuts(case, data) -> None:
    decoder, fixture = case
    text = (SSE_DIR / f"{fixture}.sse").read_text(encoding="utf-8")
    cut = data.draw(st.integers(0, len(text)))
    _run(decoder, text[:cut].splitlines())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), data=st.data())
def test_garbage_inserted(case, data) -> None:
    decoder, fixture = case
    lines = sse_lines(fixture)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(lines)))
        junk = data.draw(GARBAGE)
        lines = [*lines[:at], junk, "", *lines[at:]]
    _run(decoder, lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), data=st.data())
def test_events_reordered_or_dropped(case, data) -> None:
    decoder, fixture = case
    events = list(iter_sse(sse_lines(fixture)))
    order = data.draw(st.permutations(range(len(events))))
    keep = data.draw(st.integers(0, len(events)))
    lines: list[str] = []
    for index in order[:keep]:
        event = events[index]
        if event.event is not None:
            lines.append(f"event: {event.event}")
        lines.extend(f"data: {part}" for part in event.data.split("\n"))
        lines.append("")
    _run(decoder, lines)
