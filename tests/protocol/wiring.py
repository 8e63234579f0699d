"""Build real adapters against a fake server (shared by the fake-server protocol tests)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import httpx2

from comal.agent.core.session import SessionOptions
from comal.agent.core.toolset import standard_tools
from comal.agent.turns import Outcome, run_headless
from comal.config import Config, ContextConfig, ProviderConfig, WireApi
from comal.ledger.store import Ledger
from comal.messages import Message
from comal.providers.base import ModelRequest, Provider
from comal.providers.factory import make_provider
from comal.testing.fake_server import FakeServer

WIRES = tuple(str(wire) for wire in WireApi)
"""Every wire Comal speaks: each fake-server and invalid-call test runs on all of them."""


def provider_for(
    server: FakeServer,
    wire: str,
    client: httpx2.AsyncClient,
    *,
    api_key: str | None = "sk-test-key-0123456789",
    max_retries: int = 0,
    model: str = "fake-model",
    vision: bool | None = None,
) -> Provider:
    """A retry-wrapped adapter of `wire` pointed at `server`."""
    base = server.base_url if wire == "anthropic-messages" else server.openai_base_url
    cfg = ProviderConfig(
        name="fake", wire=wire, base_url=base, model=model, max_retries=max_retries, vision=vision
    )
    return make_provider(cfg, client=client, api_key=api_key, context_window_override=None)


def request(messages: Sequence[Message], model: str = "fake-model") -> ModelRequest:
    """A plain request with a system prompt."""
    return ModelRequest(model=model, system="You are Comal.", messages=tuple(messages))


def workspace_config(tmp_path: Path, context: ContextConfig | None = None) -> Config:
    """A configuration whose home, config dir and workspace (`ws`, created) are in `tmp_path`."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Config(
        home=tmp_path / "home",
        config_dir=tmp_path / "config",
        workspace=workspace,
        env=dict(os.environ),
        context=context or ContextConfig(),
    )


async def look(
    server: FakeServer, wire: str, ledger: Ledger, config: Config, *, vision: bool
) -> Outcome:
    """One headless session asked to `look`, through the `wire` adapter pointed at `server`."""
    async with httpx2.AsyncClient() as client:
        provider = provider_for(server, wire, client, api_key="k", max_retries=4, vision=vision)
        return await run_headless(
            ledger, config, provider, standard_tools(), SessionOptions(), prompt="look"
        )
