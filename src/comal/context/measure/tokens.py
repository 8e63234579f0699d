"""Token counting: exact where an offline tokenizer exists, a conservative estimate otherwise.

OpenAI models that use `o200k_base` or `cl100k_base` are counted exactly with toktok (the
vocabularies are compiled in, so counting never needs the network). Every other family
(Claude, Gemini, local models) is *estimated*: the larger of a characters-per-token figure for
the family and the o200k count scaled by the family's measured ratio, because characters alone
badly undercount listings, hashes and base64 (1.4–2.3 chars/token in every vocabulary).

Invariants:
- `count(text)` is a pure function of `text` for a given counter (no clock, no state that
  changes results); memoization only saves time.
- Long texts are counted in chunks cut at line ends: toktok is quadratic-ish on one huge
  string without separators, and a chunk boundary changes a count by at most a token or two.
- Calibration (the ratio measured/estimated learnt from provider usage) is applied by the
  engine, never inside a counter, so counts stay reproducible from text alone.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

import toktok

_CHUNK_CHARS = 8_192


class TokenCounter(Protocol):
    """Counts tokens of a text for one model family."""

    @property
    def name(self) -> str:
        """Stable name for reports, e.g. `o200k_base` or `estimate:claude`."""
        ...

    @property
    def exact(self) -> bool:
        """True when counts come from the model's own vocabulary."""
        ...

    def count(self, text: str) -> int:
        """Tokens in `text` (0 for the empty string)."""
        ...


def _chunks(text: str) -> list[str]:
    if len(text) <= _CHUNK_CHARS:
        return [text]
    out: list[str] = []
    start = 0
    size = len(text)
    while start < size:
        end = min(start + _CHUNK_CHARS, size)
        if end < size:
            cut = text.rfind("\n", start + _CHUNK_CHARS // 2, end)
            if cut != -1:
                end = cut + 1
        out.append(text[start:end])
        start = end
    return out


def _bpe_count(text: str, encoding: str) -> int:
    if not text:
        return 0
    # surrogateescape'd output may hold lone surrogates, which toktok cannot take.
    safe = text.encode("utf-8", errors="replace").decode("utf-8")
    return int(sum(toktok.batch_count(_chunks(safe), encoding, threads=1)))


@dataclass(frozen=True, slots=True)
class ExactCounter:
    """Exact counts with a BPE vocabulary bundled in toktok."""

    encoding: str
    """`o200k_base` or `cl100k_base`."""

    @property
    def name(self) -> str:
        """The encoding name."""
        return self.encoding

    @property
    def exact(self) -> bool:
        """Always True."""
        return True

    def count(self, text: str) -> int:
        """Exact token count."""
        return _bpe_count(text, self.encoding)


@dataclass(frozen=True, slots=True)
class EstimateCounter:
    """A conservative estimate for a family without an offline tokenizer.

    count = max(ceil(chars / chars_per_token), ceil(o200k tokens × o200k_factor)).
    """

    family: str
    chars_per_token: float
    o200k_factor: float

    @property
    def name(self) -> str:
        """`estimate:<family>`."""
        return f"estimate:{self.family}"

    @property
    def exact(self) -> bool:
        """Always False."""
        return False

    def count(self, text: str) -> int:
        """Estimated token count, erring high."""
        if not text:
            return 0
        by_chars = math.ceil(len(text) / self.chars_per_token)
        by_bpe = math.ceil(_bpe_count(text, "o200k_base") * self.o200k_factor)
        return max(by_chars, by_bpe)


# Ratios from measured chars/token (code and prose, o200k vs the family's own vocabulary):
# Claude 3 … Opus 4.6 ≈ 3.5–4.0 chars/token (o200k 4.2–4.4 → ×1.10–1.22); Claude 4.7+ and
# the 5 family ≈ 2.8–3.0 (×1.46–1.53). Families with no measurement get a cautious middle.
_CLAUDE_NEW = EstimateCounter("claude-4.7+", 2.5, 1.55)
_CLAUDE = EstimateCounter("claude", 3.0, 1.25)
_GEMINI = EstimateCounter("gemini", 3.0, 1.2)
_LOCAL = EstimateCounter("local", 3.0, 1.2)
_O200K = ExactCounter("o200k_base")
_CL100K = ExactCounter("cl100k_base")

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "chatgpt-4o", "codex")
_O_SERIES = ("o1", "o3", "o4")
_CL100K_PREFIXES = ("gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada")
_CLAUDE_NEW_MARKERS = ("opus-4-7", "opus-4.7", "opus-4-8", "opus-4-9", "opus-5", "sonnet-5")


def _bare(model: str) -> str:
    name = model.strip().lower()
    # "openai/gpt-5-mini", "anthropic/claude-…", "openrouter/google/gemini-…"
    return name.rsplit("/", 1)[-1]


def counter_for_model(model: str) -> TokenCounter:
    """The counter for a model id (provider prefixes such as `openai/` are ignored).

    Args:
        model: the model id as configured or recorded.

    Returns:
        An exact o200k/cl100k counter for OpenAI models using those encodings, otherwise a
        conservative per-family estimate (`exact` False).
    """
    name = _bare(model)
    if name.startswith(_O200K_PREFIXES) or any(
        name == p or name.startswith(p + "-") for p in _O_SERIES
    ):
        return _O200K
    if name.startswith(_CL100K_PREFIXES):
        return _CL100K
    if "claude" in name:
        if any(marker in name for marker in _CLAUDE_NEW_MARKERS):
            return _CLAUDE_NEW
        return _CLAUDE
    if "gemini" in name or "gemma" in name:
        return _GEMINI
    return _LOCAL


class MemoCounter:
    """Memoizes another counter by text, so history is tokenized once per engine.

    Bounded (least recently used out first) so a long session cannot grow it without limit;
    an evicted text is simply counted again.
    """

    def __init__(self, inner: TokenCounter, *, max_items: int = 50_000) -> None:
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self._memo: OrderedDict[str, int] = OrderedDict()
        self._max = max_items

    def count(self, text: str) -> int:
        """The inner counter's count, memoized."""
        hit = self._memo.get(text)
        if hit is not None:
            self._memo.move_to_end(text)
            return hit
        value = self.inner.count(text)
        self._memo[text] = value
        if len(self._memo) > self._max:
            self._memo.popitem(last=False)
        return value


def calibrated(count: int, ratio: float, *, exact: bool) -> int:
    """Apply a measured/estimated ratio to a local count.

    An exact counter is only ever scaled up (providers add framing tokens; a count from the
    model's own vocabulary is never too high), an estimate both ways within sane bounds.
    """
    low, high = (1.0, 10.0) if exact else (0.5, 10.0)
    factor = min(max(ratio, low), high)
    return math.ceil(count * factor)


class ScaledCounter:
    """Another counter's counts with a calibration ratio applied (for sizing decisions)."""

    def __init__(self, inner: TokenCounter, ratio: float) -> None:
        self.inner = inner
        self.ratio = ratio
        self.name = f"{inner.name}*{ratio:g}"
        self.exact = inner.exact

    def count(self, text: str) -> int:
        """The calibrated count."""
        return calibrated(self.inner.count(text), self.ratio, exact=self.exact)


@dataclass(frozen=True, slots=True)
class UpperBound:
    """At least the count `inner` would give, computed without a vocabulary.

    A byte-level BPE token covers at least one byte, so a text has at most as many o200k or
    cl100k tokens as its UTF-8 bytes (as `_bpe_count` encodes them); an estimate's BPE term
    is bounded the same way. No tokenizer is loaded: a request whose bounds already decide
    every budget question can be built before the vocabulary is (`upper_bound`).
    """

    inner: ExactCounter | EstimateCounter

    @property
    def name(self) -> str:
        """`bound:` and the inner counter's name."""
        return f"bound:{self.inner.name}"

    @property
    def exact(self) -> bool:
        """The inner counter's: calibration treats the bound as it treats the count."""
        return self.inner.exact

    def count(self, text: str) -> int:
        """An upper bound of `inner.count(text)`."""
        if not text:
            return 0
        size = len(text.encode("utf-8", errors="replace"))
        inner = self.inner
        if isinstance(inner, ExactCounter):
            return size
        by_chars = math.ceil(len(text) / inner.chars_per_token)
        return max(by_chars, math.ceil(size * inner.o200k_factor))


def upper_bound(counter: TokenCounter) -> UpperBound | None:
    """The vocabulary-free upper bound of `counter` (None for a counter it cannot bound)."""
    inner = counter.inner if isinstance(counter, MemoCounter) else counter
    if isinstance(inner, ExactCounter | EstimateCounter):
        return UpperBound(inner)
    return None
