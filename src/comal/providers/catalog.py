"""Built-in catalog of context windows and output limits of well-known models.

Figures are facts as published by each vendor (model cards, API docs) and mirrored in
LiteLLM's `model_prices_and_context_window.json` (MIT); each family names its source. The
window is what prompt *and* output may use together; where a vendor caps input separately
(OpenAI's GPT-5 family: 272k input of a 400k total) the input cap is recorded, so a prompt that
fits the budget also fits the API. Server discovery and an explicit `--context-window` come
before or on top of this table (see `factory.resolve_capabilities`).

Lookup normalizes the name (lowercase, provider path and Ollama tag removed) and picks the
longest family prefix that ends at a boundary (`-`, `.`, `:`, `@`, `_` or the end), so dated
snapshots and sizes (`gpt-4o-mini-2024-07-18`, `qwen2.5-coder:7b`) find their family.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One model family's published limits."""

    window: int
    max_output: int
    source_note: str
    vision: bool = False
    reasoning: bool | None = None
    """Whether the model reasons (takes an effort): True, False when known not to, None when
    the family mixes both (`claude`, any Claude model)."""


_OPENAI = "OpenAI model docs (platform.openai.com/docs/models); LiteLLM table"
_OPENAI_GPT5 = "OpenAI model docs: 400k total, 272k input cap, 128k output; LiteLLM table"
_ANTHROPIC = "Anthropic models overview (docs.anthropic.com); LiteLLM table"
_GOOGLE = "Google Gemini model docs (ai.google.dev); LiteLLM table"
_OPEN = "model card (trained context length); Ollama library"

_TABLE: dict[str, CatalogEntry] = {
    # OpenAI
    # Every GPT-5.x shares the 272k input cap as a floor (later ones may accept more).
    "gpt-5": CatalogEntry(272_000, 128_000, _OPENAI_GPT5, vision=True, reasoning=True),
    "gpt-4.1": CatalogEntry(1_047_576, 32_768, _OPENAI, vision=True, reasoning=False),
    "gpt-4o": CatalogEntry(128_000, 16_384, _OPENAI, vision=True, reasoning=False),
    "gpt-4o-mini": CatalogEntry(128_000, 16_384, _OPENAI, vision=True, reasoning=False),
    "gpt-4-turbo": CatalogEntry(128_000, 4_096, _OPENAI, vision=True, reasoning=False),
    "o1": CatalogEntry(200_000, 100_000, _OPENAI, vision=True, reasoning=True),
    "o3": CatalogEntry(200_000, 100_000, _OPENAI, vision=True, reasoning=True),
    "o3-mini": CatalogEntry(200_000, 100_000, _OPENAI, reasoning=True),
    "o4-mini": CatalogEntry(200_000, 100_000, _OPENAI, vision=True, reasoning=True),
    "codex-mini": CatalogEntry(200_000, 100_000, _OPENAI, reasoning=True),
    "gpt-oss-20b": CatalogEntry(131_072, 32_768, "OpenAI gpt-oss model card", reasoning=True),
    "gpt-oss-120b": CatalogEntry(131_072, 32_768, "OpenAI gpt-oss model card", reasoning=True),
    # Anthropic
    "claude-opus-4": CatalogEntry(200_000, 32_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-opus-4-1": CatalogEntry(200_000, 32_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-opus-4-5": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-opus-4-6": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-opus-4-7": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-sonnet-4": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-sonnet-4-5": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-sonnet-4-6": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-haiku-4-5": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-3-7-sonnet": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    "claude-3-5-sonnet": CatalogEntry(200_000, 8_192, _ANTHROPIC, vision=True, reasoning=False),
    "claude-3-5-haiku": CatalogEntry(200_000, 8_192, _ANTHROPIC, vision=True, reasoning=False),
    "claude-opus-4-8": CatalogEntry(200_000, 64_000, _ANTHROPIC, vision=True, reasoning=True),
    # Newer Claude generations: the standard 200k window as a floor; the models API
    # (`/v1/models/{id}`, discovery) reports the real figures and takes precedence.
    "claude-opus-5": CatalogEntry(
        200_000, 64_000, _ANTHROPIC + " (family floor)", vision=True, reasoning=True
    ),
    "claude-sonnet-5": CatalogEntry(
        200_000, 64_000, _ANTHROPIC + " (family floor)", vision=True, reasoning=True
    ),
    "claude-haiku-5": CatalogEntry(
        200_000, 64_000, _ANTHROPIC + " (family floor)", vision=True, reasoning=True
    ),
    "claude": CatalogEntry(200_000, 8_192, _ANTHROPIC + " (any Claude model)", vision=True),
    # Google
    "gemini-3": CatalogEntry(1_048_576, 65_536, _GOOGLE, vision=True, reasoning=True),
    "gemini-2.5-pro": CatalogEntry(1_048_576, 65_536, _GOOGLE, vision=True, reasoning=True),
    "gemini-2.5-flash": CatalogEntry(1_048_576, 65_536, _GOOGLE, vision=True, reasoning=True),
    "gemini-2.0-flash": CatalogEntry(1_048_576, 8_192, _GOOGLE, vision=True, reasoning=False),
    # Open-weights families (trained windows; a server may run them with less, see discovery)
    "llama3.1": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "llama3.2": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "llama3.3": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "llama-3.1": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "llama-3.2": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "llama-3.3": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "meta-llama-3.1": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "llama3": CatalogEntry(8_192, 4_096, _OPEN, reasoning=False),
    "qwen2.5": CatalogEntry(32_768, 8_192, _OPEN, reasoning=False),
    "qwen2.5-coder": CatalogEntry(32_768, 8_192, _OPEN, reasoning=False),
    "qwen3": CatalogEntry(40_960, 8_192, _OPEN, reasoning=True),
    "qwen3-coder": CatalogEntry(262_144, 65_536, _OPEN, reasoning=False),
    "deepseek-chat": CatalogEntry(128_000, 8_192, "DeepSeek API docs", reasoning=False),
    "deepseek-reasoner": CatalogEntry(128_000, 32_768, "DeepSeek API docs", reasoning=True),
    "deepseek-v3": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "deepseek-r1": CatalogEntry(131_072, 32_768, _OPEN, reasoning=True),
    "deepseek-coder-v2": CatalogEntry(163_840, 8_192, _OPEN, reasoning=False),
    "mistral-large": CatalogEntry(131_072, 8_192, "Mistral model docs", reasoning=False),
    "mistral-small": CatalogEntry(32_768, 8_192, "Mistral model docs", reasoning=False),
    "mistral-nemo": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "codestral": CatalogEntry(262_144, 8_192, "Mistral model docs", reasoning=False),
    "devstral": CatalogEntry(131_072, 8_192, "Mistral model docs", reasoning=False),
    "gemma3": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "gemma-3": CatalogEntry(131_072, 8_192, _OPEN, reasoning=False),
    "gemma2": CatalogEntry(8_192, 4_096, _OPEN, reasoning=False),
    "phi4": CatalogEntry(16_384, 4_096, _OPEN, reasoning=False),
    "phi-4": CatalogEntry(16_384, 4_096, _OPEN, reasoning=False),
    "kimi-k2": CatalogEntry(131_072, 16_384, "Moonshot Kimi K2 model card", reasoning=False),
    "glm-4.5": CatalogEntry(131_072, 16_384, "Zhipu GLM-4.5 model card", reasoning=True),
    "glm-4.6": CatalogEntry(200_000, 32_768, "Zhipu GLM-4.6 model card", reasoning=True),
}

_BOUNDARY = ("-", ".", ":", "@", "_")


def normalize_model_name(model: str) -> str:
    """Lowercase, provider path removed (`openai/gpt-4o` → `gpt-4o`), Ollama tag removed."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name.split(":", 1)[0]


def lookup(model: str) -> CatalogEntry | None:
    """The catalog entry of a model, by its longest matching family prefix."""
    name = normalize_model_name(model)
    matches = [
        key
        for key in _TABLE
        if name == key or (name.startswith(key) and name[len(key)] in _BOUNDARY)
    ]
    return _TABLE[max(matches, key=len)] if matches else None


def known_not_to_reason(model: str) -> bool:
    """Whether the catalog knows `model` takes no reasoning effort (an effort is then not sent)."""
    entry = lookup(model)
    return entry is not None and entry.reasoning is False


def families() -> tuple[str, ...]:
    """Every family prefix the catalog knows, sorted."""
    return tuple(sorted(_TABLE))
