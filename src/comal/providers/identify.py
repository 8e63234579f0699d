"""Which model server answers on a loopback port, and which models it serves.

An open port is not a model server (`python -m http.server 8000` answers too), so a server is
only used when it identifies itself (research tech.md §3.6):
- llama.cpp: `GET /props` with `default_generation_settings` or `build_info`;
- Ollama: `GET /api/version` with a `version`, models from `GET /api/tags`;
- LM Studio: `GET /api/v0/models` listing `type`/`state` entries;
- vLLM: `GET /v1/models` entries with `max_model_len` or `owned_by: "vllm"`;
- any other server whose `GET /v1/models` is an OpenAI model list (`object: "list"`).
Every probe has a short timeout and failures only mean "not this kind".
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass

import httpx2

from comal.messages import JSONObject, JSONValue
from comal.providers.discovery import fetch_json

LOOPBACK_PORTS: tuple[tuple[int, str], ...] = (
    (11434, "ollama"),
    (8080, "llama.cpp"),
    (8000, "vllm"),
    (1234, "lm-studio"),
)
"""The ports local servers listen on by default, and the server each usually is."""


@dataclass(frozen=True, slots=True)
class DetectedServer:
    """A model server that identified itself."""

    kind: str
    """`llama.cpp`, `ollama`, `lm-studio`, `vllm` or `openai-compatible`."""
    root: str
    """`http://127.0.0.1:PORT`."""
    models: tuple[str, ...]
    """The model ids it serves, in the order it lists them."""
    evidence: str
    """The endpoint that identified it."""

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"{self.root}/v1"

    @property
    def label(self) -> str:
        """A provider name for it (`llama.cpp@8080`)."""
        return f"{self.kind}@{self.root.rsplit(':', 1)[-1]}"

    def describe(self) -> str:
        """One line for people: kind, URL, what identified it and the models."""
        served = ", ".join(self.models) if self.models else "no model loaded"
        return f"{self.kind} at {self.base_url} ({self.evidence}): {served}"


async def _json(client: httpx2.AsyncClient, url: str, timeout_s: float) -> JSONValue:
    return await fetch_json(client, "GET", url, {}, timeout_s)


def _listed(listing: JSONValue, key: str, field: str) -> list[JSONObject] | None:
    items = listing.get(key) if isinstance(listing, dict) else None
    if not isinstance(items, list):
        return None
    return [item for item in items if isinstance(item, dict) and isinstance(item.get(field), str)]


def _ids(entries: list[JSONObject], field: str) -> tuple[str, ...]:
    return tuple(str(entry[field]) for entry in entries)


async def identify_server(
    client: httpx2.AsyncClient, root: str, *, timeout_s: float = 1.0
) -> DetectedServer | None:
    """What model server answers at `root`, or None when it is not one."""
    listing = await _json(client, f"{root}/v1/models", timeout_s)
    openai = _listed(listing, "data", "id")
    props = await _json(client, f"{root}/props", timeout_s)
    if isinstance(props, dict) and {"default_generation_settings", "build_info"} & props.keys():
        return DetectedServer("llama.cpp", root, _ids(openai or [], "id"), "/props")
    version = await _json(client, f"{root}/api/version", timeout_s)
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        tags = _listed(await _json(client, f"{root}/api/tags", timeout_s), "models", "name")
        return DetectedServer("ollama", root, _ids(tags or [], "name"), "/api/version")
    studio = _listed(await _json(client, f"{root}/api/v0/models", timeout_s), "data", "id")
    if studio and all("state" in e or "type" in e for e in studio):
        loaded = [e for e in studio if e.get("state") == "loaded" and e.get("type") != "embeddings"]
        return DetectedServer("lm-studio", root, _ids(loaded or studio, "id"), "/api/v0/models")
    if openai is None or not (isinstance(listing, dict) and listing.get("object") == "list"):
        return None
    if any("max_model_len" in e or e.get("owned_by") == "vllm" for e in openai):
        return DetectedServer("vllm", root, _ids(openai, "id"), "/v1/models max_model_len")
    return DetectedServer("openai-compatible", root, _ids(openai, "id"), "/v1/models")


def loopback_ports(env: Mapping[str, str] | None = None) -> tuple[int, ...]:
    """The ports searched: `COMAL_LOOPBACK_PORTS` (comma-separated) when set, else the usual
    ones (`LOOPBACK_PORTS`)."""
    raw = (os.environ if env is None else env).get("COMAL_LOOPBACK_PORTS", "")
    ports = tuple(int(p) for p in raw.replace(" ", "").split(",") if p.isdigit())
    return ports or tuple(port for port, _ in LOOPBACK_PORTS)


async def detect_loopback(
    client: httpx2.AsyncClient, *, host: str = "127.0.0.1", timeout_s: float = 1.0
) -> list[DetectedServer]:
    """Model servers answering on the usual loopback ports (`loopback_ports`), in order."""
    found = await asyncio.gather(
        *(
            identify_server(client, f"http://{host}:{port}", timeout_s=timeout_s)
            for port in loopback_ports()
        )
    )
    return [server for server in found if server is not None]
