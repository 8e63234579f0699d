"""An HTTP 200 stream with no event is asked again without streaming to learn the real error."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from comal.config import ProviderConfig
from comal.errors import ContextLengthError, EmptyStreamError
from comal.messages import user_text
from comal.providers.base import Capabilities, ModelRequest
from comal.providers.factory import make_provider
from comal.providers.reply import Reply, collect
from comal.testing.fake_server import FakeServer

CAPS = Capabilities(context_window=8_192, max_output_tokens=512, window_source="explicit")
REQUEST = ModelRequest("fake-model", "sys", (user_text("hello"),), max_output_tokens=512)


async def ask(server: FakeServer, wire: str = "openai-chat", times: int = 1) -> list[Reply]:
    base = server.openai_base_url if wire.startswith("openai") else server.base_url
    cfg = ProviderConfig(name="local", wire=wire, base_url=base, model="fake-model")
    async with httpx2.AsyncClient() as client:
        provider = make_provider(
            cfg, client=client, api_key=None, context_window_override=None, capabilities=CAPS
        )
        return [await collect(provider.stream(REQUEST)) for _ in range(times)]


async def test_the_non_streamed_answer_tells_the_real_error() -> None:
    turns: list[str | dict[str, Any]] = [
        {"text": "never sent", "cut_after_events": 0},
        {"error": "context_length"},
    ]
    with FakeServer(turns) as server:
        with pytest.raises(ContextLengthError):
            await ask(server)
        first, probe = (r.body for r in server.received)
    assert first["stream"] is True
    assert probe["stream"] is False
    assert probe["max_tokens"] == 1
    assert "stream_options" not in probe
    assert probe["messages"] == first["messages"]


async def test_a_chat_request_the_server_answers_only_unstreamed_is_sent_unstreamed() -> None:
    turns: list[str | dict[str, Any]] = [
        {"text": "never sent", "cut_after_events": 0},
        "probe",
        {"tool_calls": [{"id": "c1", "name": "Read", "arguments": {"path": "a.txt"}}]},
        "the next answer",
    ]
    with FakeServer(turns) as server:
        first, second = await ask(server, times=2)
        bodies = [r.body for r in server.received]
    assert [b["stream"] for b in bodies] == [True, False, False, False]
    assert [b["max_tokens"] for b in bodies] == [512, 1, 512, 512]
    assert all("stream_options" not in b for b in bodies[1:])
    (call,) = first.message.tool_calls
    assert (call.call_id, call.name, call.arguments) == ("c1", "Read", {"path": "a.txt"})
    assert first.finish == "tool_calls"
    assert first.usage.total_input is not None, "the unstreamed reply's usage is kept"
    # Once the server answered unstreamed what it failed to stream, it is not asked to stream.
    assert second.message.text == "the next answer"


async def test_an_empty_stream_that_asks_fine_otherwise_says_what_usually_causes_it() -> None:
    # The Anthropic decoder reads events only: no unstreamed retry, the diagnosis is the error.
    turns: list[str | dict[str, Any]] = [{"text": "never sent", "cut_after_events": 0}, "fine"]
    with FakeServer(turns) as server:
        with pytest.raises(EmptyStreamError) as caught:
            await ask(server, "anthropic-messages")
        assert server.stats().requests == 2  # not retried: the same request, the same answer
    message = caught.value.message
    assert f"{server.base_url}/v1/messages answered" in message
    assert "empty stream" in message
    assert "fails to stream it" in message
    assert "proxy" in message
