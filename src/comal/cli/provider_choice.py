"""Choosing the provider for a run.

Order: explicit `--provider` → `default_provider` in config → providers implied by API keys in
the environment (Anthropic first, then OpenAI) → the only configured provider → a model server
that identifies itself on loopback (Ollama 11434, llama.cpp 8080, vLLM 8000, LM Studio 1234;
see `providers.identify`: an open port that is not a model server is not used). Its model is
taken when it serves exactly one; otherwise the message lists them for `--model`.
Otherwise a clear message explains how to configure one and that `comal demo` runs offline.
"""

from __future__ import annotations

import dataclasses

import httpx2

from comal.config import Config, ProviderConfig
from comal.errors import ConfigError
from comal.providers.discovery import server_root
from comal.providers.identify import detect_loopback, identify_server
from comal.providers.wires import wire_of

NO_PROVIDER_HELP = """no model provider is configured.
Configure one in ~/.config/comal/config.toml or ./.comal/config.toml, for example:

  default_provider = "local"
  [providers.local]
  wire = "openai-chat"            # or openai-responses, anthropic-messages
  base_url = "http://127.0.0.1:8080/v1"
  model = "qwen2.5-coder"
  api_key_env = "LOCAL_API_KEY"   # optional

or set ANTHROPIC_API_KEY / OPENAI_API_KEY. `comal demo` runs offline with a scripted model."""


async def _detected(model: str | None) -> ProviderConfig | None:
    """The first model server on loopback that identifies itself, with its model chosen.

    Raises:
        ConfigError: it serves several models and `--model` names none of them.
    """
    async with httpx2.AsyncClient() as client:
        servers = await detect_loopback(client)
    if not servers:
        return None
    server = servers[0]
    chosen = ProviderConfig(name=server.label, wire="openai-chat", base_url=server.base_url)
    if model or len(server.models) == 1:
        return dataclasses.replace(chosen, model=model or server.models[0])
    listed = ", ".join(server.models) if server.models else "none loaded"
    raise ConfigError(
        f"found {server.describe()}; it serves {len(server.models)} models ({listed}):"
        " pass --model NAME"
    )


async def choose_provider(config: Config, name: str | None, model: str | None) -> ProviderConfig:
    """The provider configuration to use, with `--model` applied.

    Raises:
        ConfigError: the named provider does not exist, or none can be found.
    """
    chosen: ProviderConfig | None = None
    if name is not None:
        chosen = config.providers.get(name)
        if chosen is None:
            known = ", ".join(sorted(config.providers)) or "none"
            raise ConfigError(f"unknown provider {name!r}; configured: {known}")
    elif config.default_provider:
        chosen = config.providers.get(config.default_provider)
        if chosen is None:
            raise ConfigError(f"default_provider {config.default_provider!r} is not configured")
    else:
        for implied in ("anthropic", "openai"):
            if implied in config.providers:
                chosen = config.providers[implied]
                break
        if chosen is None and len(config.providers) == 1:
            chosen = next(iter(config.providers.values()))
        if chosen is None:
            chosen = await _detected(model)
    if chosen is None:
        raise ConfigError(NO_PROVIDER_HELP)
    if model:
        chosen = dataclasses.replace(chosen, model=model)
    if not chosen.model and wire_of(chosen).lists_served_model:
        chosen = await _served_model(chosen)
    if not chosen.model:
        raise ConfigError(f"provider {chosen.name!r} has no model: pass --model or set model")
    return chosen


async def _served_model(chosen: ProviderConfig) -> ProviderConfig:
    """A configured provider without a model takes the one its server serves, if only one."""
    async with httpx2.AsyncClient() as client:
        server = await identify_server(client, server_root(chosen.base_url))
    if server is not None and len(server.models) == 1:
        return dataclasses.replace(chosen, model=server.models[0])
    if server is not None and server.models:
        raise ConfigError(
            f"provider {chosen.name!r} has no model and {server.describe()}: pass --model NAME"
        )
    return chosen
