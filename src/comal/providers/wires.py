"""The registry of wires: each wire's name → its `Wire`, and what is asked of a configuration's.

A wire is one module (`providers/<wire>.py`: the adapter, the decoder and its `Wire`) plus
its line in `WIRES`. Nothing else branches on a wire's name: the factory builds the adapter
the `Wire` names, reasoning replay, model listing and window discovery go through it, and
`comal doctor` and the provider choice read its answers.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx2

from comal.config import ProviderConfig, WireApi
from comal.errors import ConfigError
from comal.providers import anthropic_messages, openai_chat, openai_responses
from comal.providers.base import Wire
from comal.providers.discovery import DiscoveredWindow, fetch_json

WIRES: Mapping[WireApi, Wire] = {
    wire.api: wire
    for wire in (openai_chat.WIRE_API, openai_responses.WIRE_API, anthropic_messages.WIRE_API)
}
"""Every wire Comal speaks, by name (`tests/unit/providers/test_wires.py` holds it equal to
`WireApi`)."""


def wire_of(cfg: ProviderConfig) -> Wire:
    """The `Wire` a configuration declares.

    Raises:
        ConfigError: the wire is not one Comal speaks.
    """
    wire = WIRES.get(WireApi(cfg.wire)) if cfg.wire in tuple(WireApi) else None
    if wire is None:
        raise ConfigError(f"providers.{cfg.name}.wire {cfg.wire!r} is not a known wire")
    return wire


async def discover_window(
    cfg: ProviderConfig,
    client: httpx2.AsyncClient,
    api_key: str | None,
    *,
    timeout_s: float = 3.0,
) -> DiscoveredWindow | None:
    """Ask the configured server for its model's window; None when it does not say.

    Never raises for an unreachable or unhelpful server: discovery is best effort.
    """
    if not cfg.model:
        return None
    return await wire_of(cfg).discover_window(cfg, client, api_key, timeout_s)


async def list_models(
    cfg: ProviderConfig, client: httpx2.AsyncClient, api_key: str | None, timeout_s: float = 5.0
) -> tuple[str, ...] | None:
    """The model ids the provider's server lists (`GET …/v1/models`, OpenAI's and Anthropic's
    form: `data[].id`), in its order; None when it lists none or does not answer."""
    wire = wire_of(cfg)
    url = wire.models_url(cfg.base_url)
    listing = await fetch_json(client, "GET", url, wire.listing_headers(api_key), timeout_s)
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    ids = [e.get("id") for e in data if isinstance(e, dict)]
    found = tuple(i for i in ids if isinstance(i, str) and i)
    return found or None
