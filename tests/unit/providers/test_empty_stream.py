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
from comal.providers.reply import collect
from comal.testing.fake_server import FakeServer

CAPS = Capabilities(context_window=8_192, max_output_tokens=512, window_source="explicit")
REQUEST = ModelRequest("fake-model", "sys", (user_text("hello"),), max_output_tokens=512)


async def ask(server: FakeServer) -> None:
    cfg = ProviderConfig(
        name="local", wire="openai-chat", base_url=server.openai_base_url, model="fake-model"
    )
    async with httpx2.AsyncClient() as client:
        provider = make_provider(
            cfg, client=client, api_key=None, context_window_override=None, capabilities=CAPS
        )
        await collect(provider.stream(REQUEST))


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


async def test_an_empty_stream_that_asks_fine_otherwise_says_what_usually_causes_it() -> None:
    turns: list[str | dict[str, Any]] = [{"text": "never sent", "cut_after_events": 0}, "fine"]
    with FakeServer(turns) as server:
        with pytest.raises(EmptyStreamError) as caught:
            await ask(server)
        assert server.stats().requests == 2  # not retried: the same request, the same answer
    message = caught.value.message
    assert f"{server.openai_base_url}/chat/completions answered" in message
    assert "empty stream" in message
    assert "proxy" in message
    assert "n_ctx" in message
