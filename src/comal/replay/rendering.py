"""One canonical text rendering of a request, tokenized once per distinct piece.

Every policy's request (system + messages) is rendered the same way, part by part:
`<system>…</system>`, `<user>…</user>`, `<assistant>…</assistant>`, `<call id name>args</call>`,
`<result id name>text</result>`, `<media …/>`. An image costs what its provider bills for it
(`images.py`): its segment holds its tag's tokens and then that many more. Reasoning parts are
not rendered (providers strip or do not bill earlier reasoning; it is identical under every
policy anyway). Text actions (`importers.plan.is_text_action`) are rendered as the agent sent
them: the call only through the assistant text that holds it, the result as a `<user>` message.

Each piece (a *segment*) starts with `<` and ends with `>\\n`. o200k's pre-tokenizer always
splits between `>\\n` and `<` (`>\\n` is one pre-token, `<` starts the next), so the token list of a
whole request is exactly the concatenation of its segments' token lists. That lets the harness
tokenize each distinct segment once (o200k, exact, via toktok) and compute the common prefix of
two requests *in tokens* by walking segments and comparing token arrays only where they differ.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import toktok

from comal.errors import missing_extra
from comal.importers.plan import is_text_action
from comal.messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    canonical_json,
)
from comal.replay.images import image_tokens

try:
    import numpy as np
except ModuleNotFoundError:  # numpy is the `bench` extra: a core install says so in one line
    raise missing_extra("numpy", "bench", "comal bench replay") from None

ENCODING = "o200k_base"
_PIXEL = 0
"""The token that stands for an image's billed tokens after its tag (never compared alone: the
tag before it names the image)."""


@dataclass(frozen=True, slots=True, eq=False)
class Segment:
    """One rendered piece of a request and its tokens (compared by identity, then text)."""

    uid: int
    text: str
    tokens: np.ndarray

    @property
    def size(self) -> int:
        """Token count."""
        return int(self.tokens.shape[0])


def media_tag(media: MediaPart, tokens: int | None = None) -> str:
    """An image's tag in the rendering: its type and size, and (when priced) the tokens the
    provider bills for it and a digest that tells two images of one size apart."""
    if tokens is None:
        return f"<media type={media.media_type} b64={len(media.data_b64)}/>"
    digest = hashlib.sha256(media.data_b64.encode()).hexdigest()[:12]
    return (
        f"<media type={media.media_type} b64={len(media.data_b64)} tokens={tokens} sha={digest}/>"
    )


def render_part(role: str, part: Part, tag: Callable[[MediaPart], str] = media_tag) -> str | None:
    """The canonical text of one part (None for parts that are not rendered)."""
    if isinstance(part, TextPart):
        return f"<{role}>\n{part.text}\n</{role}>\n"
    if isinstance(part, ToolCallPart):
        if is_text_action(part.call_id):
            return None
        arguments = canonical_json(part.arguments)
        return f"<call id={part.call_id} name={part.name}>\n{arguments}\n</call>\n"
    if isinstance(part, ToolResultPart):
        flag = " error" if part.is_error else ""
        media = "".join(f"\n{tag(m)}" for m in part.media)
        if is_text_action(part.call_id):
            return f"<user>\n{part.content}{media}\n</user>\n"
        return (
            f"<result id={part.call_id} name={part.name}{flag}>\n{part.content}{media}\n</result>\n"
        )
    if isinstance(part, MediaPart):
        return f"{tag(part)}\n"
    assert isinstance(part, ReasoningPart)
    return None


def render_system(system: str) -> str:
    """The canonical text of the system prompt."""
    return f"<system>\n{system}\n</system>\n"


@dataclass(slots=True)
class SegmentCache:
    """Memoized segments: by part identity (parts are immutable) and by text.

    It is also an exact o200k `TokenCounter` (`name`, `exact`, `count`), so the engine under
    replay counts with the same memo.
    """

    name: str = ENCODING
    exact: bool = True
    images: str = "openai"
    """Whose rule prices images (`images.provider_of`): each image's segment holds the tokens
    that provider bills for it (its tag's own tokens, then that many more)."""

    _by_text: dict[str, Segment] = field(default_factory=dict)
    _by_part: dict[int, tuple[Part, Segment | None]] = field(default_factory=dict)
    # toktok's full encode surface is private API; counts alone cannot give a token prefix.
    _encoder: object = field(default_factory=lambda: toktok._encoding(ENCODING))

    def segment(self, text: str, pixels: int = 0) -> Segment:
        """The segment for `text`, tokenized once (`pixels`: tokens its images add; the text
        names them, so it decides them)."""
        hit = self._by_text.get(text)
        if hit is None:
            # Lone surrogates (kept exactly in the ledger) cannot be encoded; count them as U+FFFD.
            safe = text.encode("utf-8", "replace").decode("utf-8")
            tokens = self._encoder.encode_to_numpy(safe, disallowed_special=())  # type: ignore[attr-defined]
            if pixels:
                tokens = np.concatenate([tokens, np.full(pixels, _PIXEL, dtype=tokens.dtype)])
            hit = Segment(len(self._by_text), text, tokens)
            self._by_text[text] = hit
        return hit

    def _priced_tag(self, media: MediaPart) -> str:
        return media_tag(media, image_tokens(media.data_b64, self.images))

    def count(self, text: str) -> int:
        """Exact o200k tokens of `text` (memoized)."""
        return self.segment(text).size

    def part(self, role: str, part: Part) -> Segment | None:
        """The segment of one part of a message with `role`."""
        key = id(part)
        hit = self._by_part.get(key)
        if hit is not None and hit[0] is part:
            return hit[1]
        text = render_part(role, part, self._priced_tag)
        segment = None if text is None else self.segment(text, _pixels(part, self.images))
        self._by_part[key] = (part, segment)
        return segment

    def request(self, system: str, messages: Sequence[Message]) -> tuple[Segment, ...]:
        """The segments of a whole request."""
        out = [self.segment(render_system(system))]
        for message in messages:
            for part in message.parts:
                segment = self.part(message.role, part)
                if segment is not None:
                    out.append(segment)
        return tuple(out)

    def message_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of some messages (without the system prompt)."""
        total = 0
        for message in messages:
            for part in message.parts:
                segment = self.part(message.role, part)
                if segment is not None:
                    total += segment.size
        return total


def _pixels(part: Part, provider: str) -> int:
    """Tokens the images of one part cost (`images.image_tokens`)."""
    if isinstance(part, MediaPart):
        return image_tokens(part.data_b64, provider)
    if isinstance(part, ToolResultPart):
        return sum(image_tokens(m.data_b64, provider) for m in part.media)
    return 0


def request_tokens(segments: Sequence[Segment]) -> int:
    """Tokens of a rendered request."""
    return sum(s.size for s in segments)


def request_text(segments: Sequence[Segment]) -> str:
    """The full canonical text of a rendered request."""
    return "".join(s.text for s in segments)


def _stream_prefix(a: Sequence[Segment], b: Sequence[Segment], i: int, j: int) -> int:
    """Common prefix, in tokens, of the token streams a[i:] and b[j:]."""
    total = 0
    ta, tb = a[i].tokens if i < len(a) else None, b[j].tokens if j < len(b) else None
    oa = ob = 0
    while ta is not None and tb is not None:
        n = min(ta.shape[0] - oa, tb.shape[0] - ob)
        diff = np.flatnonzero(ta[oa : oa + n] != tb[ob : ob + n])
        if diff.size:
            return total + int(diff[0])
        total += n
        oa += n
        ob += n
        if oa == ta.shape[0]:
            i, oa = i + 1, 0
            ta = a[i].tokens if i < len(a) else None
        if ob == tb.shape[0]:
            j, ob = j + 1, 0
            tb = b[j].tokens if j < len(b) else None
    return total


def common_prefix_tokens(a: Sequence[Segment], b: Sequence[Segment]) -> int:
    """Longest common prefix of two requests, in tokens (exact)."""
    total = 0
    i = 0
    while i < len(a) and i < len(b) and (a[i] is b[i] or a[i].text == b[i].text):
        total += a[i].size
        i += 1
    if i == len(a) or i == len(b):
        return total
    return total + _stream_prefix(a, b, i, i)
