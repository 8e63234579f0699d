"""Paging a large stored output without decoding all of it: a page index of UTF-16 offsets.

`EvidenceRead` offsets are UTF-16 units of the output decoded as UTF-8. For a large blob that is
valid UTF-8, one pass records a *page index*: every `STRIDE` bytes (moved forward to the next
character boundary) the UTF-16 unit offset and the number of newlines before that byte. A page
is then a decode of a few strides from the nearest index point, and a literal search runs over
the bytes (UTF-8 is self-synchronising, so a byte match of the UTF-8 needle is exactly
a match in the text), turning each hit into a unit offset and a line number from the index.

Blobs are content-addressed and never change, so an index is memoized by digest for the life
of the process (a few recent ones), and the bytes of the output paged last are kept (one, so
memory stays at one copy of the output). A blob that is not valid UTF-8 has no index: its text
has U+FFFD replacements that only a whole decode reproduces, and the caller decodes it whole.

Invariants: the text, offsets, lengths, line numbers and snippets equal what the whole-text
path gives for the same read.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from comal.context.units import Utf16Text, utf16_len

STRIDE = 1 << 16
"""Bytes between index points: a page read touches at most a few of them."""
MIN_BYTES = 1 << 20
"""Smaller outputs are decoded whole: that is already fast."""
_KEEP = 8


class Blobs(Protocol):
    """Where blob bytes come from (the `Ledger` is one)."""

    def blob(self, digest: str) -> bytes:
        """Bytes of one blob."""
        ...


@dataclass(frozen=True, slots=True)
class PageIndex:
    """Index points of one blob: byte offset, UTF-16 offset and newlines before each."""

    digest: str
    size: int
    byte_at: tuple[int, ...]
    unit_at: tuple[int, ...]
    lines_at: tuple[int, ...]
    total_units: int


_MEMO: OrderedDict[str, PageIndex | None] = OrderedDict()
_LAST: list[tuple[str, bytes]] = []
"""The bytes of the one large output paged last: paging on through it reads no blob again
(SQLite reaches the end of a large blob only by walking its pages from the start)."""


def _boundary(data: bytes, at: int) -> int:
    """`at` moved forward to the next UTF-8 character start (or the end)."""
    while at < len(data) and (data[at] & 0xC0) == 0x80:
        at += 1
    return at


def build_index(digest: str, data: bytes) -> PageIndex | None:
    """The page index of `data`, or None when it is not valid UTF-8."""
    byte_at, unit_at, lines_at = [0], [0], [0]
    units = lines = 0
    start = 0
    view = memoryview(data)
    while start < len(data):
        end = _boundary(data, min(start + STRIDE, len(data)))
        chunk = view[start:end]
        raw = bytes(chunk)
        if raw.isascii():
            units += len(raw)
        else:
            try:
                units += utf16_len(raw.decode("utf-8"))
            except UnicodeDecodeError:
                return None
        lines += raw.count(b"\n")
        byte_at.append(end)
        unit_at.append(units)
        lines_at.append(lines)
        start = end
    return PageIndex(digest, len(data), tuple(byte_at), tuple(unit_at), tuple(lines_at), units)


def _bytes(blobs: Blobs, digest: str) -> bytes:
    if _LAST and _LAST[0][0] == digest:
        return _LAST[0][1]
    _LAST.clear()  # drop the previous one before reading the next: one copy at a time
    data = blobs.blob(digest)
    _LAST.append((digest, data))
    return data


def paged_text(blobs: Blobs, digest: str) -> PagedText | None:
    """A stored blob ready to page (None: not valid UTF-8, decode it whole)."""
    data = _bytes(blobs, digest)
    if digest in _MEMO:
        _MEMO.move_to_end(digest)
        index = _MEMO[digest]
    else:
        index = build_index(digest, data)
        _MEMO[digest] = index
        while len(_MEMO) > _KEEP:
            _MEMO.popitem(last=False)
    return None if index is None else PagedText(data, index)


@dataclass(frozen=True, slots=True)
class PagedText:
    """A stored UTF-8 output read by ranges through its page index."""

    data: bytes
    index: PageIndex

    @property
    def units(self) -> int:
        """Total length in UTF-16 units."""
        return self.index.total_units

    def _window(self, first: int, last: int) -> tuple[int, Utf16Text]:
        """(unit offset of point `first`, the text from point `first` to point `last`)."""
        start, end = self.index.byte_at[first], self.index.byte_at[last]
        raw = self.data[start:end]
        return self.index.unit_at[first], Utf16Text.of(raw.decode("utf-8"))

    def _point(self, unit: int) -> int:
        return max(0, bisect.bisect_right(self.index.unit_at, unit) - 1)

    def slice(self, start: int, end: int) -> tuple[str, int, int]:
        """The text between two unit offsets, aligned as `Utf16Text.slice` aligns them."""
        start = min(max(start, 0), self.units)
        end = min(max(end, start), self.units)
        first = self._point(start)
        last = min(len(self.index.byte_at) - 1, self._point(end) + 1)
        base, window = self._window(first, last)
        text, a, b = window.slice(start - base, end - base)
        return text, a + base, b + base

    def byte_of_unit(self, unit: int) -> int:
        """The byte offset of the character at (aligned) unit offset `unit`."""
        first = self._point(min(max(unit, 0), self.units))
        last = min(len(self.index.byte_at) - 1, first + 1)
        base, window = self._window(first, last)
        index = window.index_of_unit(unit - base)
        return self.index.byte_at[first] + len(window.text[:index].encode("utf-8"))

    def unit_and_line(self, at: int) -> tuple[int, int]:
        """(UTF-16 offset, 1-based line number) of the character at byte offset `at`."""
        point = max(0, bisect.bisect_right(self.index.byte_at, at) - 1)
        start = self.index.byte_at[point]
        raw = self.data[start:at]
        before = raw.decode("utf-8")
        return self.index.unit_at[point] + utf16_len(before), (
            self.index.lines_at[point] + raw.count(b"\n") + 1
        )

    def line_around(self, at: int, length: int, clip: int) -> str:
        """The line holding the match at byte `at`, clipped like the whole-text search clips."""
        lo = max(0, at - 4 * clip)
        raw = self.data[lo : at + length + 4 * clip]
        rel = at - lo
        line_start = raw.rfind(b"\n", 0, rel) + 1
        line_end = raw.find(b"\n", rel)
        line = raw[line_start : line_end if line_end != -1 else len(raw)]
        head = _boundary(line, 0)
        text = line[head:].decode("utf-8", errors="ignore")
        lead_text = raw[line_start + head : rel].decode("utf-8", errors="ignore")
        if len(text) > clip:
            lead = max(0, len(lead_text) - clip // 3)
            text = text[lead : lead + clip]
        return text

    def find(self, needle: str, start_unit: int, limit: int) -> tuple[list[int], int | None]:
        """Byte offsets of up to `limit` non-overlapping matches from `start_unit` on, and the
        byte offset of the next one when there are more (else None)."""
        pattern = needle.encode("utf-8")
        hits: list[int] = []
        found = self.data.find(pattern, self.byte_of_unit(start_unit))
        while found != -1:
            if len(hits) == limit:
                return hits, found
            hits.append(found)
            found = self.data.find(pattern, found + len(pattern))
        return hits, None
