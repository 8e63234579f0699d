"""Build real adapters against a fake server (shared by the fake-server protocol tests)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx2

from comal.config import ProviderConfig
from comal.messages import Message
from comal.providers.base import ModelRequest, Provider
from comal.providers.factory import make_provider
from comal.testing.fake_server import FakeServer

WIRES = ("openai-chat", "openai-responses", "anthropic-messages")


def provider_for(
    server: FakeServer,
    wire: str,
    client: httpx2.AsyncClient,
    *,
    api_key: str | None = "sk-test-key-0123456789",
    max_retries: int = 0,
    model: str = "fake-model",
) -> Provider:
    """A retry-wrapped adapter of `wire` pointed at `server`."""
    base = server.base_url if wire == "anthropic-messages" else server.openai_base_url
    cfg = ProviderConfig(
        name="fake", wire=wire, base_url=base, model=model, max_retries=max_retries
    )
    return make_provider(cfg, client=client, api_key=api_key, context_window_override=None)


def request(messages: Sequence[Message], model: str = "fake-model") -> ModelRequest:
    """A plain request with a system prompt."""
    return ModelRequest(model=model, system="You are Comal.", messages=tuple(messages))
