"""Build providers from configuration and work out their capabilities.

The effective window follows DESIGN §2: the model's advertised window (server discovery when
the server says, else the built-in catalog), combined with every explicit value
(`--context-window`, `COMAL_CONTEXT_WINDOW`, `providers.NAME.context_window`) by taking the
**smaller**; with nothing known, 45,000 tokens. `window_source` says which figure won. Vision
is `providers.NAME.vision` when set, else the catalog's word (an unknown model has none).
Providers come back wrapped in the one retry wrapper (`RetryingProvider`).
"""

from __future__ import annotations

import httpx2

from comal.config import DEFAULT_WINDOW_TOKENS, ProviderConfig
from comal.errors import ConfigError
from comal.providers.base import Capabilities, Provider
from comal.providers.catalog import lookup
from comal.providers.discovery import DiscoveredWindow
from comal.providers.http_stream import WireProvider
from comal.providers.transport import RetryingProvider
from comal.providers.wires import discover_window, wire_of

DEFAULT_MAX_OUTPUT_TOKENS = 8_192
"""Output limit assumed when neither config, server nor catalog gives one."""


def combine_capabilities(
    cfg: ProviderConfig,
    discovered: DiscoveredWindow | None,
    override: int | None,
) -> Capabilities:
    """Pure combination of catalog, discovery and explicit values (see module docstring)."""
    entry = lookup(cfg.model) if cfg.model else None
    if discovered is not None:
        window, source, note = discovered.window, "discovered", discovered.note
    elif entry is not None:
        window, source, note = entry.window, "catalog", entry.source_note
    else:
        window, source, note = None, "fallback", "unknown model: Comal's default window"
    explicit = [v for v in (override, cfg.context_window) if v is not None and v > 0]
    if explicit and (window is None or min(explicit) < window):
        window, source, note = min(explicit), "explicit", "--context-window / configuration"
    if window is None:
        window = DEFAULT_WINDOW_TOKENS
    max_output = (
        cfg.max_output_tokens
        or (discovered.max_output if discovered is not None else None)
        or (entry.max_output if entry is not None else None)
        or DEFAULT_MAX_OUTPUT_TOKENS
    )
    return Capabilities(
        context_window=window,
        max_output_tokens=min(max_output, window),
        window_source=source,
        vision=cfg.vision if cfg.vision is not None else entry is not None and entry.vision,
        window_note=note,
    )


async def resolve_capabilities(
    cfg: ProviderConfig,
    client: httpx2.AsyncClient,
    api_key: str | None,
    override: int | None,
) -> Capabilities:
    """Catalog + server discovery + explicit values (the smaller wins) + 45,000 fallback."""
    discovered = await discover_window(cfg, client, api_key)
    return combine_capabilities(cfg, discovered, override)


def make_provider(
    cfg: ProviderConfig,
    *,
    client: httpx2.AsyncClient,
    api_key: str | None,
    context_window_override: int | None,
    capabilities: Capabilities | None = None,
) -> Provider:
    """The provider for a configuration, wrapped in `RetryingProvider(cfg.max_retries)`.

    Args:
        cfg: the provider configuration (its wire selects the adapter).
        client: the HTTP client every request goes through.
        api_key: the key (read by `Config.api_key`), or None for keyless local servers.
        context_window_override: the explicit window, if any.
        capabilities: already resolved capabilities (`resolve_capabilities`); without them
            the catalog and explicit values are used, with no server discovery.

    Raises:
        ConfigError: the wire is unknown or no model is configured.
    """
    caps = capabilities or combine_capabilities(cfg, None, context_window_override)
    inner = make_adapter(cfg, client=client, api_key=api_key, capabilities=caps)
    return RetryingProvider(inner, cfg.max_retries)


def make_adapter(
    cfg: ProviderConfig,
    *,
    client: httpx2.AsyncClient,
    api_key: str | None,
    capabilities: Capabilities,
) -> WireProvider:
    """The bare wire adapter for a configuration (no retries: `comal doctor --probe`).

    Raises:
        ConfigError: the wire is unknown or no model is configured.
    """
    adapter = wire_of(cfg).adapter
    if not cfg.model:
        raise ConfigError(f"providers.{cfg.name}.model is required")
    return adapter(cfg, client=client, api_key=api_key, capabilities=capabilities)
