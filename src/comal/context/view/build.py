"""Active memory as a pure function of the ledger: `build_view(blocks, state, fixed, …)`.

The request is: system instructions and custom instructions (as one system text), the tool
schemas, then the last checkpoint (if any) as the first user text, then every conversation block
from the checkpoint's tail on. Results of one assistant message travel, in call order, at the
head of the next user message (the Anthropic shape; other wires split them when encoding), and
consecutive user content merges into one message, so roles alternate.

Invariants:
- Same blocks, state and settings ⇒ byte-identical messages: no clock, no randomness, no set
  iteration order; every choice is made from ledger order.
- A result is shown in full, as a large-output preview (over the large-output threshold, from
  the start), or as a reference (once projected, forever); the choice depends only on the
  result itself and the recorded projection/checkpoint entries, so appending entries never
  changes how an earlier block reads — the request only grows by appending between pressure
  events.
- Token costs are counted per part with a memoized counter, so preparing a view does not
  re-tokenize history.
"""

from __future__ import annotations

import base64
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter, is_
from typing import Literal, Protocol

from comal.context.measure.anchors import Anchor
from comal.context.measure.tokens import TokenCounter, calibrated
from comal.context.view.conversation import Block, MediaRef, ResultEntry
from comal.context.view.preview_paged import paged_preview_text, paged_reference_text
from comal.context.view.rendering import full_text, preview_text, reference_text
from comal.ledger.entry import Entry
from comal.messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    canonical_json,
)
from comal.session import pageable
from comal.values import value

Mode = Literal["full", "preview", "ref"]
MESSAGE_OVERHEAD = 3
PART_OVERHEAD = 4
IMAGE_TOKENS = 1_600
"""Tokens charged per image: the provider-side cost of an image near the usual size cap."""


class BlobSource(Protocol):
    """Where result bodies and media come from (the `Ledger` is one)."""

    def body(self, entry: Entry) -> bytes | None:
        """The entry's body bytes, or None."""
        ...

    def blob(self, digest: str) -> bytes:
        """Bytes of one blob."""
        ...


@dataclass(frozen=True, slots=True)
class FixedParts:
    """What every request carries before the conversation."""

    system: str
    instructions: str
    """Custom instructions (AGENTS.md and similar), sent after the system prompt."""
    tools: tuple[ToolSpec, ...]
    mcp_tools: tuple[ToolSpec, ...] = ()
    plugin_tools: tuple[ToolSpec, ...] = ()
    """Tools contributed by loaded plugins (their own budget row), offered before MCP's."""
    plugin_owners: tuple[tuple[str, str], ...] = ()
    """(tool name, plugin name) of each plugin tool, for the report's per-plugin line."""

    @property
    def system_text(self) -> str:
        """System prompt and custom instructions as sent."""
        if not self.instructions:
            return self.system
        return f"{self.system.rstrip()}\n\n{self.instructions}"

    @property
    def all_tools(self) -> tuple[ToolSpec, ...]:
        """Native tools, plugin tools, then MCP tools, in a stable order."""
        return self.tools + self.plugin_tools + self.mcp_tools


@dataclass(frozen=True, slots=True)
class CheckpointState:
    """The latest checkpoint as recorded."""

    entry_id: str
    seq: int
    number: int
    title: str
    text: str
    tail_from_seq: int
    projected: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ViewState:
    """The pressure decisions recorded so far: what is projected, which checkpoint applies."""

    projected: frozenset[str] = frozenset()
    """`tool.result` entry ids shown as references."""
    checkpoint: CheckpointState | None = None
    media_projected: frozenset[str] = frozenset()
    """`tool.result` entry ids whose media are shown by reference (the media reserve)."""


@value
class PartCost:
    """The token cost of one part of the conversation, tied to its ledger position."""

    seq: int
    tokens: int
    kind: str
    """`text`, `call`, `reasoning`, `media`, `checkpoint`, or a result mode."""
    result: ResultEntry | None = None
    role: str = "user"
    """`user`, `assistant`, `result` or `checkpoint`."""


@dataclass(frozen=True, slots=True)
class Assembly:
    """A built view with its accounting, before budget decisions."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    parts: tuple[PartCost, ...]
    system_tokens: int
    instructions_tokens: int
    tools_tokens: int
    mcp_tokens: int
    message_count: int
    missing: tuple[str, ...] = ()
    plugin_tokens: int = 0
    part_tokens: int | None = None
    """Sum of `parts` tokens, when the builder kept it (else summed on demand)."""

    @property
    def fixed_tokens(self) -> int:
        """System, instructions and schemas."""
        schemas = self.tools_tokens + self.plugin_tokens + self.mcp_tokens
        return self.system_tokens + self.instructions_tokens + schemas

    @property
    def conversation_tokens(self) -> int:
        """Everything after the fixed parts, message framing included."""
        summed = self.part_tokens
        if summed is None:
            summed = sum(p.tokens for p in self.parts)
        return summed + MESSAGE_OVERHEAD * self.message_count

    @property
    def total_tokens(self) -> int:
        """The whole request as counted locally (uncalibrated)."""
        return self.fixed_tokens + self.conversation_tokens

    def tokens_of(self, kind: str) -> int:
        """Sum of parts of one kind."""
        return sum(p.tokens for p in self.parts if p.kind == kind)

    def estimate(self, anchor: Anchor | None, ratio: float, *, exact: bool) -> tuple[int, bool]:
        """(estimated input tokens, whether the base is measured): the anchor's measured size
        plus what came after its request, else the whole view counted and calibrated."""
        if anchor is None:
            return calibrated(self.total_tokens, ratio, exact=exact), False
        newer = [p for p in self.parts if p.seq > anchor.request_seq]
        delta = sum(p.tokens for p in newer) + MESSAGE_OVERHEAD * 2 * bool(newer)
        return anchor.measured_tokens + calibrated(delta, ratio, exact=exact), True


@dataclass(frozen=True, slots=True)
class PreparedView:
    """The request to send, with its accounting."""

    system: str
    """System prompt and custom instructions, as sent."""
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    output_reserve: int
    """Max output tokens to request: the reserve, widened to the room actually left."""
    estimated_tokens: int
    measured_base: bool
    """True when `estimated_tokens` is a provider measurement plus an estimate of newer parts."""
    checkpoint_number: int | None
    actions: tuple[str, ...]
    """Pressure actions this `prepare()` performed: `projection`, `checkpoint`."""
    counted_tokens: int = 0
    """The local (uncalibrated) count of the whole request."""
    usable_tokens: int = 0
    threshold_tokens: int = 0
    compact_refused: str | None = None
    """Why a queued manual compaction was refused (it would not shrink the view), or None."""


@dataclass(slots=True)
class ResultTexts:
    """Memoized result renderings (by entry id and mode), read from a blob source."""

    blobs: BlobSource
    large_output_bytes: int
    """Outputs up to this size always enter whole (the seed's 20 KiB by default)."""
    preview_chars: int
    whole_tokens: int = 0
    """Larger outputs still enter whole when their full text takes at most this many tokens
    (`entry.whole_limit`: the share of the window whose newest outputs are never projected);
    0: the byte threshold alone decides (an explicitly configured ceiling)."""
    counter: TokenCounter | None = None
    """Counts a large output's full text against `whole_tokens`."""
    _memo: dict[tuple[str, Mode], str] = field(default_factory=dict)
    _modes: dict[str, Mode] = field(default_factory=dict)
    blocks: dict[tuple[object, ...], tuple[tuple[Part, ...], tuple[PartCost, ...]]] = field(
        default_factory=dict
    )
    """Built blocks by (entry id, result modes, counter, vision): a block reads the same forever."""

    def natural_mode(self, item: ResultEntry) -> Mode:
        """How a result enters active memory before any projection (`entry.py`): whole up to
        the byte threshold, whole above it while its text fits `whole_tokens`, else a preview.
        Depends only on the result and this window's settings, so a block reads the same
        forever."""
        size = item.facts.size_bytes
        if size <= self.large_output_bytes:
            return "full"
        if not item.projectable:
            # An error is never projected, so one that entered whole could never leave: it
            # enters as a preview above the byte ceiling, as the seed has it.
            return "preview"
        limit = self.whole_tokens
        if self.counter is None or limit <= 0 or size > limit * MAX_BYTES_PER_TOKEN:
            return "preview"
        hit = self._modes.get(item.entry.id)
        if hit is None:
            tokens = self.counter.count(self.text(item, "full"))
            hit = "full" if tokens <= self.whole_tokens else "preview"
            self._modes[item.entry.id] = hit
        return hit

    def text(self, item: ResultEntry, mode: Mode) -> str:
        """The result's content in `mode`."""
        key = (item.entry.id, mode)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        if mode in ("preview", "ref"):
            # A large stored output is read a piece at a time, never decoded whole.
            paged = pageable(self.blobs, item.entry.body_hash)
            if paged is not None:
                value = (
                    paged_preview_text(item.facts, paged, self.preview_chars)
                    if mode == "preview"
                    else paged_reference_text(item.facts, paged)
                )
                self._memo[key] = value
                return value
        body = self.blobs.body(item.entry) or b""
        if mode == "ref":
            value = reference_text(item.facts, body)
        elif mode == "preview":
            value = preview_text(item.facts, body, self.preview_chars)
        else:
            value = full_text(body, item.facts.status, item.facts.trailer_exit_code)
        self._memo[key] = value
        return value


MAX_BYTES_PER_TOKEN = 16
"""No text the counters read takes more bytes per token (o200k and cl100k merge at most a few
dozen bytes only in long runs of one character): an output larger than this many bytes per
allowed token is previewed without being counted."""


_SCHEMA_TEXTS: dict[int, tuple[ToolSpec, str]] = {}
"""Schema texts by `id(spec)`, the spec kept beside its text so the id stays its own."""


def tool_schema_text(spec: ToolSpec) -> str:
    """The text a tool schema is counted as (memoized per spec object: specs are never
    changed once built, and every request counts the same ones)."""
    hit = _SCHEMA_TEXTS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    text = canonical_json(
        {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
    )
    if len(_SCHEMA_TEXTS) >= 4_096:
        _SCHEMA_TEXTS.clear()
    _SCHEMA_TEXTS[id(spec)] = (spec, text)
    return text


def schema_tokens(specs: Sequence[ToolSpec], counter: TokenCounter) -> int:
    """Tokens of some tool schemas."""
    return sum(counter.count(tool_schema_text(s)) for s in specs)


def plugin_schema_tokens(fixed: FixedParts, counter: TokenCounter) -> tuple[tuple[str, int], ...]:
    """Schema tokens (local counts) per loaded plugin, from the owners the fixed parts name."""
    by_name = {spec.name: spec for spec in fixed.plugin_tools}
    totals: dict[str, int] = {}
    for tool, plugin in fixed.plugin_owners:
        spec = by_name.get(tool)
        if spec is not None:
            totals[plugin] = totals.get(plugin, 0) + counter.count(tool_schema_text(spec))
    return tuple(totals.items())


def _media_stand_in(
    item: ResultEntry, media: MediaRef, vision: bool, mode: Mode, by_reserve: bool
) -> str:
    what = (
        f"[{media.media_type} · {media.size_bytes:,} bytes · kept by reference in {item.facts.ref}"
    )
    if not vision:
        return what + "; this model has no vision input, so its pixels were not seen]"
    if mode == "ref":
        return what + "; not shown any more (projected), so its pixels are not in view]"
    if by_reserve:
        return (
            what + "; not shown any more: the media reserve keeps newer images, so its pixels are"
            " not in view]"
        )
    return what + "]"


def _result_part(
    item: ResultEntry, mode: Mode, texts: ResultTexts, vision: bool, media_ref: bool = False
) -> tuple[ToolResultPart, int]:
    content = texts.text(item, mode)
    media: list[MediaPart] = []
    notes: list[str] = []
    for m in item.media:
        shown = vision and mode != "ref" and not media_ref
        if shown and (m.data_b64 is not None or m.blob is not None):
            data = m.data_b64 or _b64(texts.blobs.blob(m.blob or ""))
            media.append(MediaPart(m.media_type, data, item.facts.ref))
        else:
            notes.append(_media_stand_in(item, m, vision, mode, media_ref))
    if notes:
        content = content + "\n" + "\n".join(notes)
    part = ToolResultPart(item.call_id, item.facts.name, content, item.is_error, tuple(media))
    return part, len(media)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _part_tokens(part: Part, counter: TokenCounter) -> tuple[int, str]:
    if isinstance(part, TextPart):
        return counter.count(part.text) + PART_OVERHEAD, "text"
    if isinstance(part, ToolCallPart):
        return counter.count(part.name + canonical_json(part.arguments)) + PART_OVERHEAD, "call"
    if isinstance(part, ReasoningPart):
        opaque = part.encrypted_content or part.redacted_data or ""
        return counter.count(part.text) + len(opaque) // 4 + PART_OVERHEAD, "reasoning"
    if isinstance(part, MediaPart):
        return IMAGE_TOKENS, "media"
    return counter.count(part.content) + PART_OVERHEAD, "result"


def result_mode(item: ResultEntry, state: ViewState, texts: ResultTexts) -> Mode:
    """The mode a result is shown in under `state`."""
    if item.entry.id in state.projected:
        return "ref"
    return texts.natural_mode(item)


def block_parts(
    block: Block,
    state: ViewState,
    texts: ResultTexts,
    counter: TokenCounter,
    *,
    vision: bool = False,
) -> tuple[tuple[Part, ...], tuple[Part, ...], tuple[PartCost, ...]]:
    """One block as (its own message parts, result parts for the next user message, costs)."""
    modes = tuple(result_mode(item, state, texts) for item in block.results)
    media_refs = tuple(item.entry.id in state.media_projected for item in block.results)
    key = (block.entry.id, modes, media_refs, block.missing, counter.name, vision)
    hit = texts.blocks.get(key)
    if hit is not None:
        return block.message.parts, hit[0], hit[1]
    costs: list[PartCost] = []
    for part in block.message.parts:
        tokens, kind = _part_tokens(part, counter)
        costs.append(PartCost(block.seq, tokens, kind, role=block.role))
    results: list[Part] = []
    for item, mode, media_ref in zip(block.results, modes, media_refs, strict=True):
        result, images = _result_part(item, mode, texts, vision, media_ref)
        results.append(result)
        tokens = counter.count(result.content) + PART_OVERHEAD
        costs.append(PartCost(item.seq, tokens, mode, item, role="result"))
        if images:
            costs.append(PartCost(item.seq, IMAGE_TOKENS * images, "media", item, role="result"))
    texts.blocks[key] = (tuple(results), tuple(costs))
    return block.message.parts, tuple(results), tuple(costs)


def block_tokens(
    block: Block, state: ViewState, texts: ResultTexts, counter: TokenCounter, *, vision: bool
) -> int:
    """Tokens one block adds to a view (framing included)."""
    _, _, costs = block_parts(block, state, texts, counter, vision=vision)
    framing = MESSAGE_OVERHEAD * (2 if block.results else 1)
    return sum(c.tokens for c in costs) + framing


_BLOCK_SEQ = attrgetter("entry.seq")


def start_index(blocks: Sequence[Block], state: ViewState) -> int:
    """Index of the first block a view under `state` includes (blocks are in seq order)."""
    checkpoint = state.checkpoint
    if checkpoint is None:
        return 0
    return bisect_left(blocks, checkpoint.tail_from_seq, key=_BLOCK_SEQ)


@dataclass(slots=True)
class _Walk:
    """What `build_view` has assembled after some of its blocks (its loop state)."""

    messages: list[Message] = field(default_factory=list)
    parts: list[PartCost] = field(default_factory=list)
    pending: list[Part] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    tokens: int = 0
    """Sum of `parts` tokens."""

    def take(
        self,
        block: Block,
        state: ViewState,
        texts: ResultTexts,
        counter: TokenCounter,
        vision: bool,
    ) -> None:
        """Add one block: its parts, and the messages it completes."""
        own, results, costs = block_parts(block, state, texts, counter, vision=vision)
        self.parts.extend(costs)
        self.tokens += sum(c.tokens for c in costs)
        if block.role == "user":
            self.pending.extend(own)
            return
        if self.pending:
            self.messages.append(Message("user", tuple(self.pending)))
        self.messages.append(block.message)
        self.pending = list(results)
        self.missing.extend(block.missing)


def _start(state: ViewState, counter: TokenCounter) -> _Walk:
    walk = _Walk()
    checkpoint = state.checkpoint
    if checkpoint is not None:
        walk.pending.append(TextPart(checkpoint.text))
        tokens = counter.count(checkpoint.text) + PART_OVERHEAD
        walk.parts.append(PartCost(checkpoint.seq, tokens, "checkpoint", role="checkpoint"))
        walk.tokens = tokens
    return walk


def _assembly(walk: _Walk, fixed: FixedParts, counter: TokenCounter) -> Assembly:
    messages = list(walk.messages)
    if walk.pending:
        messages.append(Message("user", tuple(walk.pending)))
    return Assembly(
        system=fixed.system_text,
        messages=tuple(messages),
        tools=fixed.all_tools,
        parts=tuple(walk.parts),
        system_tokens=counter.count(fixed.system),
        instructions_tokens=counter.count(fixed.instructions),
        tools_tokens=schema_tokens(fixed.tools, counter),
        mcp_tokens=schema_tokens(fixed.mcp_tools, counter),
        plugin_tokens=schema_tokens(fixed.plugin_tools, counter),
        message_count=len(messages),
        missing=tuple(walk.missing),
        part_tokens=walk.tokens,
    )


def build_view(
    blocks: Sequence[Block],
    state: ViewState,
    fixed: FixedParts,
    texts: ResultTexts,
    counter: TokenCounter,
    *,
    vision: bool = False,
) -> Assembly:
    """Build active memory from conversation blocks and recorded decisions.

    Args:
        blocks: the session's conversation blocks (`conversation_blocks`).
        state: projections and the checkpoint in force.
        fixed: system, instructions and tool schemas.
        texts: result renderings (memoized).
        counter: token counter (memoized).
        vision: whether the model takes images; without it, media become text stand-ins.

    Returns:
        The messages and their accounting. Calls without a result are listed in `missing`.
    """
    walk = _start(state, counter)
    for block in blocks[start_index(blocks, state) :]:
        walk.take(block, state, texts, counter, vision)
    return _assembly(walk, fixed, counter)


@dataclass(frozen=True, slots=True)
class _Mark:
    """`_Walk` sizes after a number of blocks, to resume from there."""

    messages: int
    parts: int
    missing: int
    tokens: int
    pending: tuple[Part, ...]


class ViewBuilder:
    """`build_view`, resuming the previous build where its blocks are unchanged.

    Between pressure events a view only grows by appending, so the blocks of the last build
    are, object for object, the start of the next one but for its newest block (rebuilt when
    its results arrive). The walk is resumed after the longest run of identical blocks; any
    other change (state, fixed parts, renderings, counter) builds from the start. The result is
    exactly `build_view`'s.
    """

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._blocks: list[Block] = []
        self._walk = _Walk()
        self._marks: list[_Mark] = []

    def build(
        self,
        blocks: Sequence[Block],
        state: ViewState,
        fixed: FixedParts,
        texts: ResultTexts,
        counter: TokenCounter,
        *,
        vision: bool = False,
    ) -> Assembly:
        """What `build_view` returns for the same arguments."""
        view = list(blocks[start_index(blocks, state) :])
        key = (state, fixed, texts, counter.name, vision)
        same = self._key is not None and all(map(is_, key[1:3], self._key[1:3]))
        kept = self._kept(view) if same and key == self._key else -1
        if kept < 0:
            self._key = key
            self._walk = _start(state, counter)
            self._marks = [self._mark()]
            kept = 0
        else:
            mark = self._marks[kept]
            walk = self._walk
            del walk.messages[mark.messages :], walk.parts[mark.parts :]
            del walk.missing[mark.missing :]
            walk.tokens = mark.tokens
            walk.pending = list(mark.pending)
            del self._marks[kept + 1 :]
        for block in view[kept:]:
            self._walk.take(block, state, texts, counter, vision)
            self._marks.append(self._mark())
        self._blocks = view
        return _assembly(self._walk, fixed, counter)

    def _kept(self, view: list[Block]) -> int:
        """How many leading blocks of `view` are those of the last build (-1: none usable)."""
        old = self._blocks
        kept = min(len(old), len(view))
        # Only the newest blocks change between builds: look back from the end first.
        while kept and old[kept - 1] is not view[kept - 1]:
            kept -= 1
        if not all(map(is_, old[:kept], view[:kept])):
            return -1
        return kept

    def _mark(self) -> _Mark:
        walk = self._walk
        return _Mark(
            len(walk.messages),
            len(walk.parts),
            len(walk.missing),
            walk.tokens,
            tuple(walk.pending),
        )
