"""Ask a server for its model's context window, and notice when a server truncated silently.

Probes (research tech.md §3.6), each with a short timeout, failures ignored:
- Anthropic: `GET /v1/models/{id}` → `max_input_tokens`, `max_tokens`.
- vLLM: `GET {base}/models` → `data[].max_model_len` (the served window).
- llama.cpp: `GET /props` → `default_generation_settings.n_ctx` (the real per-slot window),
  else `GET {base}/models` → `data[].meta.n_ctx` (the runtime window, where listed), and only
  then `meta.n_ctx_train` (the trained maximum, which the server may not give).
- Ollama: `POST /api/show` → `parameters` `num_ctx N` (a Modelfile override) first, then the
  loaded `context_length` from `GET /api/ps`, then `model_info["<arch>.context_length"]`.
- LM Studio: `GET /api/v0/models` → `loaded_context_length` / `max_context_length`.
OpenAI itself advertises no window; its base URL is never probed.

Ollama silently truncates prompts longer than its `num_ctx` instead of failing, so
`detect_prompt_truncation` compares the prompt tokens it reports with Comal's own count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

import httpx2

from comal.config import ProviderConfig
from comal.messages import JSONObject, JSONValue


@dataclass(frozen=True, slots=True)
class DiscoveredWindow:
    """What a server said about its model."""

    window: int
    max_output: int | None
    note: str
    """Which endpoint and field gave the figure."""


def server_root(base_url: str) -> str:
    """The server root of an OpenAI-style base URL (`http://h:11434/v1` → `http://h:11434`)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def is_openai_hosted(base_url: str) -> bool:
    """OpenAI's own API, which advertises no windows (never probed)."""
    return "api.openai.com" in base_url


def _positive(value: JSONValue) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def fetch_json(
    client: httpx2.AsyncClient,
    method: str,
    url: str,
    headers: dict[str, str],
    timeout_s: float,
    body: JSONObject | None = None,
) -> JSONValue:
    """The JSON a server answers with 200, or None for anything else (an error status, no
    answer in time, a body that is not JSON): discovery never fails a session."""
    try:
        response = await client.request(
            method, url, headers=headers, json=body, timeout=httpx2.Timeout(timeout_s)
        )
        if response.status_code != 200:
            return None
        value: JSONValue = response.json()
    except (httpx2.HTTPError, ValueError):
        return None
    return value


def _entry(listing: JSONValue, model: str) -> JSONObject | None:
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    for entry in entries:
        if entry.get("id") == model:
            return entry
    return entries[0] if len(entries) == 1 else None


async def anthropic_window(
    client: httpx2.AsyncClient, cfg: ProviderConfig, headers: dict[str, str], timeout_s: float
) -> DiscoveredWindow | None:
    root = server_root(cfg.base_url)
    info = await fetch_json(
        client, "GET", f"{root}/v1/models/{quote(cfg.model, safe='')}", headers, timeout_s
    )
    if not isinstance(info, dict):
        return None
    window = _positive(info.get("max_input_tokens"))
    if window is None:
        return None
    return DiscoveredWindow(
        window, _positive(info.get("max_tokens")), "Anthropic /v1/models/{id} max_input_tokens"
    )


class OpenAICompatibleWire:
    """What the OpenAI-style wires (Chat Completions, Responses) share as a `Wire`: a bearer
    token, models listed at `{base}/models`, a base URL ending in `/v1`, a served model taken
    when none is configured, and the window asked of the server (never of OpenAI itself)."""

    versioned_base = True
    lists_served_model = True

    def models_url(self, base_url: str) -> str:
        """`{base_url}/models`."""
        return f"{base_url.rstrip('/')}/models"

    def listing_headers(self, api_key: str | None) -> dict[str, str]:
        """A bearer token, when there is a key."""
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    async def discover_window(
        self, cfg: ProviderConfig, client: httpx2.AsyncClient, api_key: str | None, timeout_s: float
    ) -> DiscoveredWindow | None:
        """The probes of vLLM, llama.cpp, Ollama and LM Studio (see the module docstring)."""
        if is_openai_hosted(cfg.base_url):
            return None
        return await _openai_compatible(client, cfg, self.listing_headers(api_key), timeout_s)


async def _ollama(
    client: httpx2.AsyncClient, cfg: ProviderConfig, root: str, timeout_s: float
) -> DiscoveredWindow | None:
    show = await fetch_json(client, "POST", f"{root}/api/show", {}, timeout_s, {"model": cfg.model})
    if not isinstance(show, dict):
        return None
    params = show.get("parameters")
    match = re.search(r"(?m)^\s*num_ctx\s+(\d+)", params) if isinstance(params, str) else None
    if match:
        return DiscoveredWindow(int(match.group(1)), None, "Ollama /api/show parameters num_ctx")
    running = await fetch_json(client, "GET", f"{root}/api/ps", {}, timeout_s)
    models = running.get("models") if isinstance(running, dict) else None
    for loaded in models if isinstance(models, list) else []:
        if isinstance(loaded, dict) and cfg.model in (loaded.get("name"), loaded.get("model")):
            length = _positive(loaded.get("context_length"))
            if length:
                return DiscoveredWindow(length, None, "Ollama /api/ps context_length (loaded)")
    info = show.get("model_info")
    if isinstance(info, dict):
        for key, value in sorted(info.items()):
            if key.endswith(".context_length") and _positive(value):
                return DiscoveredWindow(
                    int(str(value)), None, f"Ollama /api/show model_info {key} (trained)"
                )
    return None


async def _openai_compatible(
    client: httpx2.AsyncClient, cfg: ProviderConfig, headers: dict[str, str], timeout_s: float
) -> DiscoveredWindow | None:
    root = server_root(cfg.base_url)
    entry = _entry(
        await fetch_json(client, "GET", f"{cfg.base_url}/models", headers, timeout_s), cfg.model
    )
    if entry is not None and _positive(entry.get("max_model_len")):
        return DiscoveredWindow(
            int(str(entry["max_model_len"])), None, "vLLM /v1/models max_model_len"
        )
    props = await fetch_json(client, "GET", f"{root}/props", headers, timeout_s)
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if n_ctx:
        return DiscoveredWindow(n_ctx, None, "llama.cpp /props n_ctx")
    meta = entry.get("meta") if entry is not None else None
    runtime = _positive(meta.get("n_ctx")) if isinstance(meta, dict) else None
    if runtime:
        return DiscoveredWindow(runtime, None, "llama.cpp /v1/models meta.n_ctx (runtime)")
    ollama = await _ollama(client, cfg, root, timeout_s)
    if ollama is not None:
        return ollama
    studio = _entry(
        await fetch_json(client, "GET", f"{root}/api/v0/models", headers, timeout_s), cfg.model
    )
    if studio is not None:
        for key in ("loaded_context_length", "max_context_length"):
            length = _positive(studio.get(key))
            if length:
                return DiscoveredWindow(length, None, f"LM Studio /api/v0/models {key}")
    trained = _positive(meta.get("n_ctx_train")) if isinstance(meta, dict) else None
    if trained:
        return DiscoveredWindow(trained, None, "llama.cpp /v1/models meta.n_ctx_train (trained)")
    return None


def detect_prompt_truncation(
    reported_prompt_tokens: int, our_estimate: int, tools_tokens: int = 0
) -> str | None:
    """A warning when a server counted far fewer prompt tokens than Comal sent.

    Tokenizers differ between models (Comal may only estimate), so only a large shortfall
    counts: under 60 % of the estimate and at least 512 tokens missing. Two causes are known:
    the server cut the prompt (Ollama's num_ctx), or the model's chat template rendered no tool
    definitions (SmolLM2's own template under llama-server: 254 tokens counted against 1,447
    sent). When tools were offered and the shortfall is about their size (half to twice), the
    template is named first.

    Args:
        reported_prompt_tokens: the server's prompt-token count.
        our_estimate: Comal's estimate of the request.
        tools_tokens: a rough size of the tool definitions sent (0 when none were).

    Returns:
        The warning text, or None when the counts are compatible.
    """
    if our_estimate <= 0 or reported_prompt_tokens < 0:
        return None
    missing = our_estimate - reported_prompt_tokens
    if reported_prompt_tokens >= 0.6 * our_estimate or missing < 512:
        return None
    counted = (
        f"the server counted {reported_prompt_tokens:,} prompt tokens where Comal estimated"
        f" {our_estimate:,}"
    )
    if tools_tokens > 0 and tools_tokens // 2 <= missing <= 2 * tools_tokens:
        return (
            f"{counted}: the model's chat template probably dropped the tool definitions"
            f" (about {tools_tokens:,} tokens), so the model cannot see its tools. For"
            " llama-server, run it with --jinja and a template that renders tools (/props shows"
            " chat_template_caps.supports_tool_calls). Or the server cut the prompt (Ollama cuts"
            " prompts to its num_ctx): raise num_ctx or set --context-window."
        )
    return (
        f"{counted}: it probably truncated the prompt silently (Ollama cuts prompts to"
        " its num_ctx). Raise the server's num_ctx or set --context-window to what it really"
        " holds."
    )
