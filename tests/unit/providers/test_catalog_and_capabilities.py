"""Catalog lookup, window discovery from each server kind, and the window combination rules."""

from __future__ import annotations

import httpx2
import pytest

from comal.config import DEFAULT_WINDOW_TOKENS, ProviderConfig
from comal.errors import ConfigError
from comal.providers.catalog import families, lookup, normalize_model_name
from comal.providers.discovery import DiscoveredWindow, detect_prompt_truncation
from comal.providers.factory import combine_capabilities, make_provider, resolve_capabilities
from comal.providers.wires import discover_window
from comal.testing.fake_server import FakeServer


@pytest.mark.parametrize(
    ("model", "window", "max_output"),
    [
        ("gpt-4o-mini-2024-07-18", 128_000, 16_384),
        ("openai/gpt-4o", 128_000, 16_384),
        ("gpt-5.4-mini", 272_000, 128_000),
        ("gpt-4.1-nano", 1_047_576, 32_768),
        ("o3-mini", 200_000, 100_000),
        ("claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("claude-opus-4-20250514", 200_000, 32_000),
        ("claude-sonnet-5", 200_000, 64_000),
        ("gemini-2.5-pro", 1_048_576, 65_536),
        ("models/gemini-3-pro-preview", 1_048_576, 65_536),
        ("qwen2.5-coder:7b", 32_768, 8_192),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 262_144, 65_536),
        ("llama3.1:8b", 131_072, 8_192),
        ("deepseek-chat", 128_000, 8_192),
    ],
)
def test_catalog_lookup(model, window, max_output) -> None:
    entry = lookup(model)
    assert entry is not None
    assert (entry.window, entry.max_output) == (window, max_output)
    assert entry.source_note


def test_unknown_models_and_boundaries() -> None:
    assert lookup("my-finetune") is None
    assert lookup("o3x") is None  # a prefix must end at a boundary
    assert normalize_model_name("hf.co/org/Qwen2.5-Coder:Q4") == "qwen2.5-coder"
    assert "gpt-5" in families()


def cfg(model: str = "", **kw) -> ProviderConfig:
    return ProviderConfig(
        name="p",
        wire=kw.pop("wire", "openai-chat"),
        base_url=kw.pop("base_url", "http://x/v1"),
        model=model,
        **kw,
    )


def test_window_combination_rules() -> None:
    assert combine_capabilities(cfg("gpt-4o"), None, None).window_source == "catalog"
    fallback = combine_capabilities(cfg("mystery"), None, None)
    assert (fallback.context_window, fallback.window_source) == (DEFAULT_WINDOW_TOKENS, "fallback")
    found = DiscoveredWindow(8192, None, "vLLM /v1/models max_model_len")
    discovered = combine_capabilities(cfg("qwen2.5-coder"), found, None)
    assert (discovered.context_window, discovered.window_source) == (8192, "discovered")
    # explicit values are combined by taking the smaller
    smaller = combine_capabilities(cfg("gpt-4o"), None, 32_000)
    assert (smaller.context_window, smaller.window_source) == (32_000, "explicit")
    larger = combine_capabilities(cfg("gpt-4o"), None, 500_000)
    assert (larger.context_window, larger.window_source) == (128_000, "catalog")
    both = combine_capabilities(cfg("mystery", context_window=20_000), None, 30_000)
    assert (both.context_window, both.window_source) == (20_000, "explicit")
    explicit_only = combine_capabilities(cfg("mystery"), None, 90_000)
    assert (explicit_only.context_window, explicit_only.window_source) == (90_000, "explicit")
    assert explicit_only.max_output_tokens == 8_192
    assert combine_capabilities(cfg("gpt-4o"), None, 4_000).max_output_tokens == 4_000


@pytest.mark.parametrize(
    ("style", "note", "window"),
    [
        ("vllm", "vLLM /v1/models max_model_len", 16_384),
        ("llamacpp", "llama.cpp /props n_ctx", 16_384),
        ("ollama", "Ollama /api/show model_info qwen2.context_length (trained)", 16_384),
    ],
)
async def test_discovery_of_local_servers(style, note, window) -> None:
    with FakeServer(advertised_window=16_384, discovery_style=style, model="local") as server:
        async with httpx2.AsyncClient() as client:
            caps = await resolve_capabilities(
                cfg("local", base_url=server.openai_base_url), client, None, None
            )
    assert (caps.context_window, caps.window_source, caps.window_note) == (
        window,
        "discovered",
        note,
    )


async def test_ollama_num_ctx_wins_over_trained_length() -> None:
    with FakeServer(
        advertised_window=131_072, discovery_style="ollama", ollama_num_ctx=8192
    ) as server:
        async with httpx2.AsyncClient() as client:
            found = await discover_window(
                cfg("qwen", base_url=server.openai_base_url), client, None
            )
    assert found == DiscoveredWindow(8192, None, "Ollama /api/show parameters num_ctx")


async def test_anthropic_models_api_and_explicit_override() -> None:
    with FakeServer(
        advertised_window=1_000_000, max_output=128_000, discovery_style="anthropic"
    ) as server:
        anthropic = cfg("claude-opus-5", wire="anthropic-messages", base_url=server.base_url)
        async with httpx2.AsyncClient() as client:
            caps = await resolve_capabilities(anthropic, client, "sk-ant", None)
            capped = await resolve_capabilities(anthropic, client, "sk-ant", 150_000)
    assert (caps.context_window, caps.max_output_tokens, caps.window_source) == (
        1_000_000,
        128_000,
        "discovered",
    )
    assert (capped.context_window, capped.window_source) == (150_000, "explicit")


async def test_unreachable_server_falls_back_quietly() -> None:
    with FakeServer() as server:
        dead = server.openai_base_url
    async with httpx2.AsyncClient() as client:
        caps = await resolve_capabilities(cfg("mystery", base_url=dead), client, None, None)
        openai = await discover_window(
            cfg("gpt-4o", base_url="https://api.openai.com/v1"), client, "k"
        )
    assert caps.window_source == "fallback"
    assert openai is None  # OpenAI advertises no window: never probed


def test_prompt_truncation_detection() -> None:
    assert detect_prompt_truncation(2048, 3940) is not None
    assert "num_ctx" in (detect_prompt_truncation(2048, 8000) or "")
    assert detect_prompt_truncation(3700, 3940) is None  # tokenizer differences are fine
    assert detect_prompt_truncation(100, 400) is None  # too small to judge


def test_a_template_that_drops_the_tools_is_named_when_the_shortfall_is_their_size() -> None:
    # SmolLM2's own template under llama-server: 254 tokens counted against 1,447 sent.
    assert detect_prompt_truncation(254, 1447, tools_tokens=1100) == (
        "the server counted 254 prompt tokens where Comal estimated 1,447: the model's chat"
        " template probably dropped the tool definitions (about 1,100 tokens), so the model"
        " cannot see its tools. For llama-server, run it with --jinja and a template that renders"
        " tools (/props shows chat_template_caps.supports_tool_calls). Or the server cut the"
        " prompt (Ollama cuts prompts to its num_ctx): raise num_ctx or set --context-window."
    )
    # Far more missing than the tools could explain, or no tools: the prompt was cut.
    assert "probably truncated" in (detect_prompt_truncation(2048, 8000, tools_tokens=300) or "")
    assert "probably truncated" in (detect_prompt_truncation(254, 1447) or "")


def test_make_provider_rejects_unknown_wire_and_missing_model() -> None:
    async def nothing() -> None: ...

    client = httpx2.AsyncClient()
    with pytest.raises(ConfigError, match="wire"):
        make_provider(
            cfg("m", wire="gemini"), client=client, api_key=None, context_window_override=None
        )
    with pytest.raises(ConfigError, match="model"):
        make_provider(cfg(""), client=client, api_key=None, context_window_override=None)
