"""The preview of a large stored output, built a piece at a time through its page index.

`preview_text` (rendering.py) is the rule: header, head, elision note, lines of note in the
hidden middle, tail. It works on the whole decoded text and all its lines, which for a 50 MB
output means several copies of it at once (the bytes, the text, its lines, the slices between
them). This builds the same preview, byte for byte, holding only:

- the head window (the first strides: enough characters for the head) and the tail window
  (the last strides: enough for the tail);
- one piece of the hidden middle at a time, split into lines exactly as `str.splitlines` splits
  the whole middle (a line cut by a piece waits for the next one), each piece's lines ranked as
  `notable_lines` ranks them;
- the middle's lines that rank (or follow a ranked traceback frame), with their positions:
  `notable_lines` over that subsequence chooses what it would choose over every line, since
  lines that do not rank are never chosen and play no part in its order or dedupe.

Invariants: `paged_preview_text(facts, paged, chars) == preview_text(facts, body, chars)` for
the body the index describes; outputs too small for the windows to stay apart are previewed
from their whole text (they are small).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate, compress, repeat
from operator import eq, is_not

from comal.context.view.rendering import (  # the whole-text rules' own parts: one rule each
    _EDGE_LINES,
    _PATH_HINT,
    _SALIENT,
    _SALIENT_MAX,
    ResultFacts,
    _clip,
    _cut_head,
    _cut_tail,
    _join,
    _line_ranks,
    assemble_preview,
    evidence_call,
    header,
    notable_lines,
    preview_text,
    trailer,
)
from comal.session import PagedText, Utf16Text, utf16_len

_PIECE_POINTS = 16
"""Strides decoded at a time while walking the middle."""


@dataclass(frozen=True, slots=True)
class _Window:
    """The text between two points, with the unit offset where it starts."""

    start_unit: int
    text: str


def _window(paged: PagedText, first: int, last: int) -> _Window:
    index = paged.index
    with paged.blobs.blob_ranges(paged.digest) as read:
        raw = read(index.byte_at[first], index.byte_at[last])
    return _Window(index.unit_at[first], raw.decode("utf-8", errors="replace"))


def _pieces(paged: PagedText, start: int, end: int) -> Iterator[str]:
    """The text between unit offsets `start` and `end` (both character starts), a piece at
    a time."""
    index = paged.index
    unit_at = index.unit_at
    point = max(0, bisect.bisect_right(unit_at, start) - 1)
    last = len(unit_at) - 1
    with paged.blobs.blob_ranges(paged.digest) as read:
        while point < last and unit_at[point] < end:
            stop = min(last, point + _PIECE_POINTS)
            raw = read(index.byte_at[point], index.byte_at[stop])
            text = raw.decode("utf-8", errors="replace")
            lo, hi = unit_at[point], unit_at[stop]
            if lo < start or hi > end:
                wide = Utf16Text.of(text)
                a = wide.index_of_unit(max(start, lo) - lo)
                b = wide.index_of_unit(min(end, hi) - lo) if hi > end else len(text)
                text = text[a:b]
            yield text
            point = stop


_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""What `str.splitlines` splits on ("\r\n" counting as one break)."""


def _line_lists(pieces: Iterator[str]) -> Iterator[list[str]]:
    """The lines of the pieces joined, as `"".join(pieces).splitlines()` gives them, a list
    per piece (a line a piece cuts goes with the next one)."""
    carry = ""
    for piece in pieces:
        buf = carry + piece if carry else piece
        lines = buf.splitlines()
        if not buf or (buf[-1] in _BREAKS and buf[-1] != "\r"):
            carry = ""
        elif buf[-1] == "\r":
            # Its line is whole, but a "\n" starting the next piece belongs to its break.
            carry = lines.pop() + "\r"
        else:
            carry = lines.pop()
        yield lines
    if carry:
        yield carry.splitlines()


def _middle_notes(
    paged: PagedText, start: int, end: int, blank_first: bool, blank_last: bool, budget: int
) -> list[tuple[int, str]]:
    """`notable_lines(middle_lines, budget)` for the middle between units `start` and `end`,
    its first and/or last line blanked as `_whole_lines` blanks them."""
    positions: list[int] = []
    kept: list[str] = []
    ranks: list[int | None] = []
    count = 0  # lines ranked so far
    follows = False  # the last line ranked was 0: the next line is kept too

    def rank(lines: list[str]) -> None:
        nonlocal count, follows
        values = _line_ranks(lines)
        wanted = set(compress(range(len(values)), map(is_not, values, repeat(None))))
        wanted.update(i + 1 for i in compress(range(len(values)), map(eq, values, repeat(0))))
        if follows and lines:
            wanted.add(0)
        for i in sorted(wanted):
            if i < len(lines):
                positions.append(count + i)
                kept.append(lines[i])
                ranks.append(values[i])
        follows = bool(values) and values[-1] == 0
        count += len(lines)

    held: list[str] | None = None
    for lines in _line_lists(_pieces(paged, start, end)):
        if not lines:
            continue
        if held is not None:
            rank(held)
        if count == 0 and held is None and blank_first:
            lines[0] = ""
        held = lines
    if held is not None:
        if blank_last:
            held[-1] = ""
        rank(held)
    return [(positions[i], text) for i, text in notable_lines(kept, budget, ranks)]


def paged_preview_text(facts: ResultFacts, paged: PagedText, chars: int) -> str:
    """`preview_text(facts, body, chars)` for the body `paged` reads (see the module
    docstring)."""
    index = paged.index
    total = index.total_units
    last = len(index.byte_at) - 1
    head_size, tail_size = chars * 3 // 4, chars // 4
    # Windows of at least one character more than a cut looks at (4 bytes per character at
    # most), so a cut on the window is the cut on the whole text.
    head_end = min(last, bisect.bisect_left(index.byte_at, 4 * head_size + 4))
    tail_start = max(0, bisect.bisect_right(index.byte_at, index.size - 4 * tail_size - 4) - 1)
    if head_end >= tail_start:
        with paged.blobs.blob_ranges(paged.digest) as read:
            body = read(0, index.size)
        return preview_text(facts, body, chars)
    start = _window(paged, 0, head_end)
    end = _window(paged, tail_start, last)
    tail = _cut_tail(end.text, tail_size)
    rest_end = total - utf16_len(tail)
    before_tail = end.text[: len(end.text) - len(tail)]
    rest_ends_line = before_tail.endswith("\n")
    head = _cut_head(start.text, head_size)
    notes = _middle_notes(
        paged,
        utf16_len(head),
        rest_end,
        bool(head) and not head.endswith("\n"),
        not rest_ends_line,
        chars // 8,
    )
    if notes:
        head = _cut_head(start.text, head_size - sum(len(n) + 8 for _, n in notes))
        notes = _middle_notes(
            paged,
            utf16_len(head),
            rest_end,
            bool(head) and not head.endswith("\n"),
            not rest_ends_line,
            chars // 8,
        )
    hidden_from = utf16_len(head)
    hidden_units = rest_end - hidden_from
    return assemble_preview(
        facts, head, tail, hidden_from, hidden_units, notes, not_utf8=not index.utf8
    )


_SALIENT_WORDS = (
    *('File "', "::", "assert", "Error", "Exception", "Traceback", "FAIL", "PANIC", "panic"),
    *("fatal", "Fatal", "FATAL", "ERROR", "error"),
)
"""A literal every `_SALIENT` match holds but a `path.ext:123` one (which holds a
`_PATH_HINT`): a line with neither cannot be salient."""


def _salient_candidates(lines: list[str]) -> list[int]:
    """Indexes of the lines that may match `_SALIENT` (the others cannot), in order."""
    text = "\n".join(lines)
    ends = [end + i + 1 for i, end in enumerate(accumulate(map(len, lines)))]
    found = {bisect.bisect_right(ends, m.start()) for m in _PATH_HINT.finditer(text)}
    for word in _SALIENT_WORDS:
        at = text.find(word)
        while at != -1:
            index = bisect.bisect_right(ends, at)
            found.add(index)
            at = text.find(word, ends[index]) if index < len(ends) else -1
    return sorted(found)


def paged_reference_text(facts: ResultFacts, paged: PagedText) -> str:
    """`reference_text(facts, body)` for the body `paged` reads, a piece at a time: the first
    and last lines, and the salient ones (first few and last few, each text once)."""
    total = paged.index.total_units
    first: list[str] = []
    last: deque[str] = deque(maxlen=_EDGE_LINES)
    count = 0
    seen: set[str] = set()
    early: list[tuple[int, str]] = []
    late: deque[tuple[int, str]] = deque(maxlen=_SALIENT_MAX)
    found = 0
    for lines in _line_lists(_pieces(paged, 0, total)):
        for i in _salient_candidates(lines):
            line = lines[i]
            stripped = line.strip()
            if count + i < _EDGE_LINES or not stripped or stripped in seen:
                continue
            if not _SALIENT.search(line):
                continue
            seen.add(stripped)
            found += 1
            mark = (count + i + 1, _clip(line.rstrip()))
            (early if len(early) < 3 else late).append(mark)
        first.extend(lines[: _EDGE_LINES - len(first)])
        last.extend(lines[-_EDGE_LINES:])
        count += len(lines)
    head = min(_EDGE_LINES, count)
    tail_from = max(head, count - _EDGE_LINES)
    # The last lines are not salient ones (they are quoted as the tail): drop their marks,
    # which are the last ones found. `late` holds enough for the last few that remain.
    known = early + list(late)
    while known and known[-1][0] - 1 >= tail_from:
        known.pop()
        found -= 1
    marks = known if found <= _SALIENT_MAX else known[:3] + known[-(_SALIENT_MAX - 3) :]
    tail = list(last)[len(last) - (count - tail_from) :] if count > tail_from else []
    out = [header(facts, "projected")]
    out.extend(f"{i + 1}| {_clip(first[i])}" for i in range(head))
    if marks or count > head + len(tail):
        out.append(f"… {count - head - len(tail):,} more lines; salient ones:")
        out.extend(f"{n}| {line}" for n, line in marks)
    out.extend(f"{tail_from + i + 1}| {_clip(line)}" for i, line in enumerate(tail))
    out.append(f"[full text, {total:,} UTF-16 units: {evidence_call(facts.ref)}]")
    return _join("\n".join(out), trailer(facts.status, facts.trailer_exit_code))
