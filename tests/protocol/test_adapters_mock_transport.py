"""Adapters over `httpx2.MockTransport`: exact bytes, URLs, headers and failure mapping."""

from __future__ import annotations

import json

import httpx2
import pytest

from comal.config import ProviderConfig
from comal.errors import ContextLengthError, InvalidRequestError, NetworkError, ProviderError
from comal.messages import user_text
from comal.providers.anthropic_messages import AnthropicMessagesProvider
from comal.providers.base import Capabilities, ModelRequest
from comal.providers.http_stream import WireProvider
from comal.providers.openai_chat import OpenAIChatProvider
from comal.providers.openai_responses import OpenAIResponsesProvider
from comal.providers.reply import collect
from tests.protocol.sse_fixtures import sse_bytes

CAPS = Capabilities(context_window=100_000, max_output_tokens=4096, window_source="explicit")
REQ = ModelRequest("m", "sys", (user_text("hi"),))
KEY = "sk-mock-0123456789"

CASES = [
    (
        OpenAIChatProvider,
        "http://h/v1",
        "http://h/v1/chat/completions",
        "openai_chat_text_length",
        "authorization",
        f"Bearer {KEY}",
    ),
    (
        OpenAIResponsesProvider,
        "http://h/v1",
        "http://h/v1/responses",
        "responses_incomplete",
        "authorization",
        f"Bearer {KEY}",
    ),
    (
        AnthropicMessagesProvider,
        "http://h",
        "http://h/v1/messages",
        "anthropic_cumulative_max_tokens",
        "x-api-key",
        KEY,
    ),
]


def make(cls, base: str, handler) -> tuple[WireProvider, httpx2.AsyncClient]:
    cfg = ProviderConfig(
        name="t", wire=cls.wire.value, base_url=base, model="m", headers=(("x-extra", "1"),)
    )
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return cls(cfg, client=client, api_key=KEY, capabilities=CAPS), client


@pytest.mark.parametrize(("cls", "base", "url", "fixture", "header", "value"), CASES)
async def test_posts_exact_encoded_bytes_with_auth(cls, base, url, fixture, header, value) -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(
            200, content=sse_bytes(fixture), headers={"content-type": "text/event-stream"}
        )

    provider, client = make(cls, base, handler)
    async with client:
        reply = await collect(provider.stream(REQ))
    assert reply.finish == "length"
    (request,) = seen
    assert str(request.url) == url
    assert request.content == provider.encode(REQ)
    assert request.headers[header] == value
    assert request.headers["x-extra"] == "1"
    if cls is AnthropicMessagesProvider:
        assert request.headers["anthropic-version"] == "2023-06-01"
    assert json.loads(request.content)["stream"] is True


async def test_openai_hosted_chat_uses_max_completion_tokens() -> None:
    cfg = ProviderConfig(
        name="o", wire="openai-chat", base_url="https://api.openai.com/v1", model="gpt-5"
    )
    async with httpx2.AsyncClient() as client:
        body = json.loads(
            OpenAIChatProvider(cfg, client=client, api_key=None, capabilities=CAPS).encode(REQ)
        )
    assert body["max_completion_tokens"] == 4096
    assert "max_tokens" not in body


async def test_error_status_is_classified_and_the_key_scrubbed() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        body = {
            "error": {
                "message": (
                    "This model's maximum context length is 8192 tokens. However, your"
                    f" messages resulted in 9000 tokens. key={KEY}"
                ),
                "code": "context_length_exceeded",
            }
        }
        return httpx2.Response(400, json=body)

    provider, client = make(OpenAIChatProvider, "http://h/v1", handler)
    async with client:
        with pytest.raises(ContextLengthError) as info:
            await collect(provider.stream(REQ))
    assert (info.value.reported_tokens, info.value.limit_tokens) == (9000, 8192)
    assert KEY not in str(info.value)
    assert KEY not in (info.value.raw or "")


async def test_json_error_with_status_200_and_non_stream_bodies() -> None:
    def error_200(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, json={"error": {"message": "prompt is too long: 300000 tokens > 200000 maximum"}}
        )

    provider, client = make(AnthropicMessagesProvider, "http://h", error_200)
    async with client:
        with pytest.raises(ContextLengthError):
            await collect(provider.stream(REQ))

    def html(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, text="<html>login</html>", headers={"content-type": "text/html"}
        )

    provider, client = make(OpenAIChatProvider, "http://h/v1", html)
    async with client:
        with pytest.raises(InvalidRequestError, match="expected an event stream"):
            await collect(provider.stream(REQ))


@pytest.mark.parametrize(
    "exc",
    [
        httpx2.ConnectError("refused"),
        httpx2.ReadTimeout("slow"),
        httpx2.RemoteProtocolError("peer closed"),
    ],
)
async def test_transport_failures_are_network_errors(exc) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise exc

    provider, client = make(OpenAIResponsesProvider, "http://h/v1", handler)
    async with client:
        with pytest.raises(NetworkError) as info:
            await collect(provider.stream(REQ))
    assert info.value.retryable
    assert isinstance(info.value, ProviderError)
