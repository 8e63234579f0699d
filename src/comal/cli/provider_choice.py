"""Choosing the provider for a run.

Order: explicit `--provider` → `default_provider` in config → providers implied by API keys in
the environment (Anthropic first, then OpenAI) → the only configured provider → a local
OpenAI-compatible server answering on loopback (Ollama 11434, llama.cpp 8080, vLLM 8000).
Otherwise a clear message explains how to configure one and that `comal demo` runs offline.
"""

from __future__ import annotations

import asyncio
import dataclasses

from comal.config import Config, ProviderConfig
from comal.errors import ConfigError

LOCAL_SERVERS: tuple[tuple[str, int, str], ...] = (
    ("ollama", 11434, "http://127.0.0.1:11434/v1"),
    ("llama.cpp", 8080, "http://127.0.0.1:8080/v1"),
    ("vllm", 8000, "http://127.0.0.1:8000/v1"),
)

NO_PROVIDER_HELP = """no model provider is configured.
Configure one in ~/.config/comal/config.toml or ./.comal/config.toml, for example:

  default_provider = "local"
  [providers.local]
  wire = "openai-chat"            # or openai-responses, anthropic-messages
  base_url = "http://127.0.0.1:8080/v1"
  model = "qwen2.5-coder"
  api_key_env = "LOCAL_API_KEY"   # optional

or set ANTHROPIC_API_KEY / OPENAI_API_KEY. `comal demo` runs offline with a scripted model."""


async def _answers(port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 0.3)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True


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
            for label, port, url in LOCAL_SERVERS:
                if await _answers(port):
                    chosen = ProviderConfig(name=label, wire="openai-chat", base_url=url)
                    break
    if chosen is None:
        raise ConfigError(NO_PROVIDER_HELP)
    if model:
        chosen = dataclasses.replace(chosen, model=model)
    if not chosen.model:
        raise ConfigError(f"provider {chosen.name!r} has no model: pass --model or set model")
    return chosen
