"""Stage 2 — deterministic derivation: a numbered, titled checkpoint plus a verbatim tail.

The checkpoint text holds the **request** (the user's messages verbatim; very long ones, or too
many, by reference), the **work state** (board, files with digests, recent commands with exit
codes, open errors, pending/uncertain calls, the last assistant statement) and bounded
**evidence references** (the results of the newest covered turn plus the id range of the
others and the index call). Nothing the tail shows verbatim is repeated in it, and a message
the user sent many times verbatim appears once. Active memory becomes that text followed by the
most recent complete blocks that fit under the *landing* the engine passes in: the largest
request that still pays for itself before the next event and leaves room for the session's next
stretch (`pressure.checkpoint_landing`, derived in docs/context.md). A block whose outputs do
not fit enters with its own large outputs by reference. A block is never split, so tool pairs
(and Anthropic thinking + tool_use turns) stay whole.

No model is called: derivation works even when the history is far over the window, and the same
ledger always gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

from comal.context.measure.budget import Budget
from comal.context.measure.tokens import TokenCounter
from comal.context.relief.evidence_names import INDEX_CALL, evidence_names, result_ordinals
from comal.context.relief.projection import min_projectable_tokens
from comal.context.relief.workstate import (
    PATH_KEYS,
    WorkState,
    clip,
    collect_calls,
    first_arg,
    prefix_key,
    without_refs,
    work_state,
)
from comal.context.view.build import ResultTexts, ViewState, block_tokens
from comal.context.view.conversation import Block, ConversationIndex, ResultEntry
from comal.context.view.rendering import evidence_call
from comal.ledger.entry import Entry
from comal.ledger.records import Kind

_DIGITS = re.compile(r"\d+")
EVIDENCE_HEADER = "## Evidence (every earlier output"
"""How the checkpoint's evidence section starts (readers find the ordinals it names by it)."""
WORK_STATE_HEADER = "## Work state"
"""How the work-state section starts (its lines name outputs by ordinal: `… · E17`)."""
LONG_ASK_CHARS = 2_000
"""User messages longer than this appear by head + reference."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Section bounds of a checkpoint; tightened when the checkpoint must shrink."""

    request_tokens: int
    evidence_items: int = 20
    """Most results of the newest covered turn listed: a turn of many parallel calls is still
    named within a few hundred tokens; the rest by id range and the index call."""
    statement_chars: int = 1_500
    work_state: bool = True
    evidence_tokens: int = 2_000
    """Most the list naming every covered output may take before it compacts (ranges)."""


@dataclass(frozen=True, slots=True)
class Draft:
    """A derived checkpoint, ready to append."""

    number: int
    title: str
    text: str
    covers_through_seq: int
    tail_from_seq: int
    projected: tuple[str, ...]
    tail_tokens: int


def _user_texts(blocks: Sequence[Block]) -> list[tuple[Entry, str]]:
    return [
        (b.entry, b.message.text)
        for b in blocks
        if b.role == "user" and b.entry.kind == Kind.MESSAGE_USER and b.message.text.strip()
    ]


def _ask(entry: Entry, text: str, long_chars: int = LONG_ASK_CHARS) -> str:
    if len(text) <= long_chars:
        return f"({entry.id})\n{text}"
    head = text[: long_chars // 3]
    call = evidence_call(entry.id, field="text")
    return f"({entry.id}, {len(text):,} characters; the rest with {call})\n{head}…"


def _shape(text: str) -> str:
    """A message with its numbers blanked: repeats that differ only in a count share it."""
    return _DIGITS.sub("#", text)


def _distinct(asks: list[tuple[Entry, str]]) -> list[tuple[Entry, str]]:
    """Each distinct ask once, where it was last sent, its earlier copies named by reference.

    A repeat (a harness re-sending the same format reminder, "found 3 actions" then "found 2
    actions") adds no information but would be re-billed on every later call, so messages that
    differ only in their numbers count as one, shown as last sent.
    """
    groups: dict[str, list[tuple[int, Entry, str]]] = {}
    for index, (entry, text) in enumerate(asks):
        groups.setdefault(_shape(text), []).append((index, entry, text))
    out = []
    for members in sorted(groups.values(), key=lambda group: group[-1][0]):
        _, entry, text = members[-1]
        if len(members) > 1:
            how = "" if len({t for _, _, t in members}) == 1 else " with other numbers"
            text = f"[sent {len(members)} times{how}, first as {members[0][1].id}]\n{text}"
        out.append((entry, text))
    return out


def _request_section(asks: list[tuple[Entry, str]], counter: TokenCounter, limit: int) -> list[str]:
    asks = _distinct(asks)
    rendered = [_ask(entry, text) for entry, text in asks]
    if not rendered:
        return ["(no user message recorded)"]
    if sum(counter.count(r) for r in rendered) <= limit:
        return rendered
    # First ask (the task) and the newest ones verbatim; the middle by one-line reference.
    keep_first = rendered[0]
    long_chars = LONG_ASK_CHARS
    while counter.count(keep_first) > limit and long_chars > 200:
        # A small window: even the task's head does not fit, so less of it is quoted (the
        # whole text stays one EvidenceRead away).
        long_chars //= 2
        keep_first = _ask(asks[0][0], asks[0][1], long_chars)
    budget = limit - counter.count(keep_first)
    newest: list[str] = []
    for r in reversed(rendered[1:]):
        cost = counter.count(r)
        if cost > budget:
            break
        newest.insert(0, r)
        budget -= cost
    middle = asks[1 : len(asks) - len(newest)]
    refs = [f"({e.id}, by reference) {clip(t, 100)}" for e, t in middle]
    return [keep_first, *refs, *newest]


def _last_statement(blocks: Sequence[Block], size: int) -> str | None:
    for block in reversed(blocks):
        if block.role != "assistant" or not block.message.text.strip():
            continue
        text = block.message.text.strip()
        if len(text) > size:
            call = evidence_call(block.entry.id, field="text")
            text = f"{text[:size]}… (the rest with {call})"
        return f"({block.entry.id})\n{text}"
    return None


def _evidence_section(
    covered: list[ResultEntry],
    last_turn: Sequence[ResultEntry],
    tail: Sequence[Block],
    entries: Sequence[Entry],
    limits: Limits,
    counter: TokenCounter,
    named: frozenset[str],
    index: ConversationIndex | None = None,
) -> list[str]:
    """Every covered output, named by ordinal (`evidence_names`), the likeliest needed first.

    First, with full ids: the results of the newest covered turn — the one the tail continues
    from — and those on the files the tail's calls work on, unless the work state already
    names them (`named`: their entry ids), at most `limits.evidence_items`; then every other
    one by tool and file.
    """
    calls = collect_calls(entries, index)
    tail_paths = {
        path
        for block in tail
        for call in block.message.tool_calls
        if (path := first_arg(call.arguments, PATH_KEYS)) is not None
    }

    def on_tail_file(item: ResultEntry) -> bool:
        call = calls.get(item.entry.id)
        return call is not None and call.path in tail_paths

    on_files = (i for i in reversed(covered) if on_tail_file(i)) if tail_paths else ()
    priority: list[ResultEntry] = []
    for item in chain(last_turn, on_files):
        if len(priority) >= limits.evidence_items:
            break
        if item.entry.id in named or item in priority:
            continue
        priority.append(item)
    lines = evidence_names(
        covered, priority, calls, result_ordinals(entries), counter, limits.evidence_tokens, named
    )
    if covered:
        # The index pages through the same outputs with their full ids, oldest first.
        lines.append(f"every result of this session with its full id, oldest first: {INDEX_CALL}")
    return lines


def _section(title: str, lines: Sequence[str]) -> list[str]:
    return [f"{title}:", *(f"- {line}" for line in lines)] if lines else []


def title_for(number: int, state: WorkState, asks: list[tuple[Entry, str]]) -> str:
    """A short deterministic title: the board item in progress, else the newest ask."""
    doing = next((line for line in state.board if line.startswith("[in_progress]")), None)
    if doing is not None:
        return clip(doing.split(":", 1)[-1], 72)
    if asks:
        first_line = asks[-1][1].strip().splitlines()[0]
        return clip(first_line, 72)
    return f"checkpoint {number}"


_TEXTS: dict[tuple[object, ...], tuple[Sequence[Block], ResultTexts, tuple[str, str]]] = {}
"""Recent `checkpoint_text` answers: a derivation weighs the same cut more than once."""


def checkpoint_text(
    number: int,
    entries: Sequence[Entry],
    blocks: Sequence[Block],
    covered: int,
    blobs_texts: ResultTexts,
    counter: TokenCounter,
    limits: Limits,
    index: ConversationIndex | None = None,
) -> tuple[str, str]:
    """The checkpoint as the model sees it, and its title (memoized: the same entries, blocks
    object, cut and bounds give the same text; `index`, the conversation index the blocks came
    from, lends the work state its pairing)."""
    key = (number, prefix_key(entries), id(blocks), covered, id(blobs_texts), counter.name, limits)
    hit = _TEXTS.get(key)
    if hit is not None and hit[0] is blocks and hit[1] is blobs_texts:
        return hit[2]
    found = _checkpoint_text(number, entries, blocks, covered, blobs_texts, counter, limits, index)
    if len(_TEXTS) >= 8:
        _TEXTS.clear()
    _TEXTS[key] = (blocks, blobs_texts, found)
    return found


def _checkpoint_text(
    number: int,
    entries: Sequence[Entry],
    blocks: Sequence[Block],
    covered: int,
    blobs_texts: ResultTexts,
    counter: TokenCounter,
    limits: Limits,
    index: ConversationIndex | None,
) -> tuple[str, str]:
    """The checkpoint as the model sees it, and its title.

    Args:
        number: the checkpoint number.
        entries: every entry of the session.
        blocks: the conversation blocks.
        covered: how many leading blocks the checkpoint replaces (the tail starts there).
        blobs_texts: result renderings (for bodies of open errors).
        counter: token counter.
        limits: section bounds.
        index: the conversation index `blocks` came from, if it has taken exactly `entries`.
    """
    # What the verbatim tail shows is not repeated: every later call would re-bill it twice.
    tail_refs = {item.entry.id for block in blocks[covered:] for item in block.results}
    state = without_refs(work_state(entries, blobs_texts.blobs, index), tail_refs)
    asks = _user_texts(blocks)
    title = title_for(number, state, asks)
    last_seq = blocks[covered - 1].last_seq if covered else 0
    lines = [
        f"[checkpoint {number} · {title}]",
        "Earlier conversation is replaced by this checkpoint, derived deterministically from the"
        f" session ledger (entries through seq {last_seq}); no model summarized it. More recent"
        " turns follow verbatim. Every output stays exactly readable with EvidenceRead and the"
        " ref shown (`E17`: this session's 17th output).",
        "",
        "## Request (the user's messages, verbatim)",
        *_request_section(asks, counter, limits.request_tokens),
    ]
    work: list[str] = []
    if limits.work_state:
        work += ["", WORK_STATE_HEADER]
        work += _section("Board", state.board) or ["Board: (none recorded)"]
        work += _section("Files", [line.text for line in state.files])
        work += _section("Recent commands", [line.text for line in state.commands])
        work += _section("Open errors", [line.text for line in state.errors])
        pending = [line.text for line in state.pending]
        work += _section("Pending or uncertain calls (not re-run)", pending)
        statement = _last_statement(blocks[:covered], limits.statement_chars)
        if statement is not None:
            work += ["Last assistant statement " + statement]
    lines += work
    results = [item for block in blocks[:covered] for item in block.results]
    last_turn = next((b.results for b in reversed(blocks[:covered]) if b.results), ())
    named = state.refs if limits.work_state else frozenset()
    evidence = _evidence_section(
        results, last_turn, blocks[covered:], entries, limits, counter, named, index
    )
    if evidence:
        lines += [
            "",
            EVIDENCE_HEADER + "; `E17` is this session's 17th output and"
            ' EvidenceRead takes it as ref, e.g. EvidenceRead {"ref":"E17"})',
            *(f"- {e}" for e in evidence),
        ]
    return "\n".join(lines), title


def _by_reference(block: Block, large_bytes: int, keep: frozenset[str]) -> frozenset[str]:
    """The outputs of an older tail block shown by reference: its large ones (over
    `large_bytes`, never errors), except the working set's (`keep`)."""
    return frozenset(
        r.entry.id
        for r in block.results
        if r.projectable and r.facts.size_bytes > large_bytes and r.entry.id not in keep
    )


def _tail(
    blocks: Sequence[Block],
    state: ViewState,
    texts: ResultTexts,
    counter: TokenCounter,
    *,
    vision: bool,
    tail_budget: int,
    room: int,
    large_bytes: int,
    keep: frozenset[str] = frozenset(),
) -> tuple[int, frozenset[str], int]:
    """(first tail block index, extra projected result ids, tail tokens).

    The newest block is kept whole if it fits `room`. Older blocks enter with their large
    outputs (over `large_bytes`) by reference: those carry the fewest later-used facts per
    token, so the tail's room goes to messages and small results, many more of them — except
    the working set (`keep`: the outputs the session is working with, `working_set.py`),
    which enters whole.
    """
    start = len(blocks)
    projected = set(state.projected)
    used = 0
    while start > 0:
        block = blocks[start - 1]
        newest = start == len(blocks)
        limit = room if newest else tail_budget
        extra: set[str] = set()
        if not newest:
            extra = set(_by_reference(block, large_bytes, keep))
        trial = ViewState(frozenset(projected | extra), None, state.media_projected)
        cost = block_tokens(block, trial, texts, counter, vision=vision)
        if used + cost > limit:
            # Reference the block's own large outputs (errors stay whole).
            extra = {r.entry.id for r in block.results if r.projectable}
            trial = ViewState(frozenset(projected | extra), None, state.media_projected)
            cost = block_tokens(block, trial, texts, counter, vision=vision)
        if used + cost > limit:
            break
        projected |= extra
        used += cost
        start -= 1
    return start, frozenset(projected - state.projected), used


def full_limits(usable: int) -> Limits:
    """The normal form's bounds: a tenth of the usable room for the asks, a twelfth for the
    list naming every covered output."""
    return Limits(request_tokens=max(usable // 10, 400), evidence_tokens=max(usable // 12, 300))


def deepest_cut(
    number: int,
    entries: Sequence[Entry],
    blocks: Sequence[Block],
    state: ViewState,
    texts: ResultTexts,
    counter: TokenCounter,
    budget: Budget,
    fixed_tokens: int,
    *,
    vision: bool = False,
    index: ConversationIndex | None = None,
) -> int:
    """The smallest request a normal checkpoint leaves: fixed parts, the checkpoint covering
    everything but the newest block, and that block (`A₀` of `pressure.landing`)."""
    limits = full_limits(budget.usable)
    covered = max(len(blocks) - 1, 0)
    text, _ = checkpoint_text(number, entries, blocks, covered, texts, counter, limits, index)
    newest = block_tokens(blocks[-1], state, texts, counter, vision=vision) if blocks else 0
    return fixed_tokens + counter.count(text) + newest


def derive(
    number: int,
    entries: Sequence[Entry],
    blocks: Sequence[Block],
    state: ViewState,
    texts: ResultTexts,
    counter: TokenCounter,
    budget: Budget,
    fixed_tokens: int,
    *,
    landing: int | None = None,
    vision: bool = False,
    index: ConversationIndex | None = None,
    keep: frozenset[str] = frozenset(),
) -> Draft:
    """Derive checkpoint `number`; the smallest form is used when the normal one cannot fit.

    Args:
        landing: the largest request (fixed parts, checkpoint, tail) the checkpoint may leave;
            default the budget's target. The tail takes every recent block that fits under it.
        keep: results the tail shows whole (the working set), never by reference.

    Returns the draft even when it does not fit: the caller checks.
    """
    last_seq = entries[-1].seq if entries else 0
    usable = budget.usable
    land = budget.target if landing is None else landing
    forms = (
        full_limits(usable),
        Limits(
            request_tokens=max(usable // 20, 200),
            evidence_items=6,
            statement_chars=400,
            evidence_tokens=max(usable // 24, 150),
        ),
        Limits(
            request_tokens=max(usable // 40, 100),
            evidence_items=0,
            work_state=False,
            evidence_tokens=0,
        ),
    )
    draft: Draft | None = None
    for limits in forms:
        # The text depends on where the tail starts and vice versa: the tail is sized against
        # a checkpoint covering everything (the largest it can be), then once more against the
        # text that tail leads to (smaller: it leaves out what the tail shows).
        probe, _ = checkpoint_text(
            number, entries, blocks, len(blocks), texts, counter, limits, index
        )
        # The newest block — the turn the next request continues — may use the room up to the
        # target even when the landing is lower: without it the next call would not see the
        # results it asked for.
        room = max(max(land, budget.target) - fixed_tokens - counter.count(probe), 0)
        text = probe
        start, extra, tail_tokens = len(blocks), frozenset[str](), 0
        for _ in range(2):
            start, extra, tail_tokens = _tail(
                blocks,
                state,
                texts,
                counter,
                vision=vision,
                tail_budget=max(land - fixed_tokens - counter.count(text), 0),
                room=room,
                large_bytes=4 * min_projectable_tokens(usable),
                keep=keep,
            )
            text, title = checkpoint_text(
                number, entries, blocks, start, texts, counter, limits, index
            )
        tail_from = blocks[start].seq if start < len(blocks) else last_seq + 1
        covers = blocks[start - 1].last_seq if start else 0
        draft = Draft(number, title, text, covers, tail_from, tuple(sorted(extra)), tail_tokens)
        if fixed_tokens + counter.count(text) + tail_tokens <= max(land, budget.target):
            return draft
    assert draft is not None
    return draft


def tail_tokens_by_block(
    blocks: Sequence[Block],
    since_seq: int,
    state: ViewState,
    texts: ResultTexts,
    counter: TokenCounter,
    budget: Budget,
    *,
    vision: bool = False,
    keep: frozenset[str] = frozenset(),
) -> list[tuple[int, int]]:
    """(seq, tokens) of each block from the one at `since_seq` to the one before the newest,
    newest first, rendered as `derive`'s tail renders them: the working set (`keep`) whole,
    other large outputs by reference. A tail starting at a block adds the sum down to it."""
    large_bytes = 4 * min_projectable_tokens(budget.usable)
    out: list[tuple[int, int]] = []
    for block in reversed(blocks[:-1]):
        if block.seq < since_seq:
            break
        extra = _by_reference(block, large_bytes, keep)
        trial = ViewState(frozenset(state.projected | extra), None, state.media_projected)
        out.append((block.seq, block_tokens(block, trial, texts, counter, vision=vision)))
    return out
