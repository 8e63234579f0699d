"""Paging a large stored output without decoding all of it, through its page index.

`EvidenceRead` offsets are UTF-16 units of the output decoded as UTF-8 with U+FFFD for
undecodable bytes. The ledger keeps, with every large blob, a page index (`ledger/pages.py`):
points every stride where the decoder has nothing pending, each with its UTF-16 offset and the
newlines before it. A page reads and decodes the bytes between the points around it; a literal
search reads the blob a megabyte at a time — over the bytes when the output is valid UTF-8
(UTF-8 is self-synchronising, so a byte match of the UTF-8 needle is exactly a match in the
text), over each piece's decoded text otherwise — and turns each hit into a unit offset, a
line number and a snippet from the points around it. No step holds the whole output.

Invariants: the text, offsets, lengths, line numbers and snippets equal what the whole-text
path gives for the same read (the bytes between two points decode to exactly the whole text's
characters between them).
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from comal.ledger.pages import INDEX_MIN_BYTES, PageIndex, ReadRange
from comal.session.units import Utf16Text, utf16_len

MIN_BYTES: Final = INDEX_MIN_BYTES
"""Smaller outputs are decoded whole: that is already fast."""
SNIPPET: Final = 240
"""A hit's snippet: its line, clipped to this many characters around the match."""
MAX_NEEDLE_UNITS: Final = 4_096
"""Longer needles are searched in the whole text (a hit and its snippet must fit the margin a
search reads around each piece)."""
_GROUP = 16
"""Points a search reads at a time (16 strides: about a megabyte)."""
_MARGIN: Final = 4 * (SNIPPET + MAX_NEEDLE_UNITS)
"""Bytes of context a hit needs either side (a UTF-8 character is at most 4 bytes, a UTF-16
unit at most 3): the whole match, and a snippet's characters before and after it."""
_KEEP = 8


@runtime_checkable
class Blobs(Protocol):
    """Where blob bytes and page indexes come from (the `Ledger` is one)."""

    def blob_size(self, digest: str) -> int:
        """Length of the blob in bytes."""
        ...

    def page_index(self, digest: str) -> PageIndex:
        """The blob's page index."""
        ...

    def blob_ranges(self, digest: str) -> AbstractContextManager[ReadRange]:
        """A reader of the blob's byte ranges."""
        ...


_MEMO: OrderedDict[str, PageIndex] = OrderedDict()
"""Indexes of the outputs paged last. Blobs are content-addressed and never change, so an
index is valid for the same digest in any ledger."""


def pageable(source: object, digest: str | None) -> PagedText | None:
    """The blob `digest` ready to page, when it is large and `source` can page it."""
    if digest is None or not isinstance(source, Blobs) or source.blob_size(digest) < MIN_BYTES:
        return None
    return paged_text(source, digest)


def paged_text(blobs: Blobs, digest: str) -> PagedText:
    """A stored blob ready to page."""
    index = _MEMO.get(digest)
    if index is None:
        index = blobs.page_index(digest)
        _MEMO[digest] = index
        while len(_MEMO) > _KEEP:
            _MEMO.popitem(last=False)
    else:
        _MEMO.move_to_end(digest)
    return PagedText(blobs, digest, index)


def snippet_of(text: str, start: int, at_text_start: bool) -> str:
    """The line around the match starting at index `start` of `text`, clipped to `SNIPPET`
    characters a third of them before the match.

    `text` is the whole text or a window of it with at least `SNIPPET` characters either side
    of the match (or reaching that end of the whole text); `at_text_start` says the window
    starts where the whole text does. A line longer than the window is clipped inside it, so
    the snippet is the one the whole text gives.
    """
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line = text[line_start : line_end if line_end != -1 else len(text)]
    if len(line) > SNIPPET or (line_start == 0 and not at_text_start):
        lead = max(0, start - line_start - SNIPPET // 3)
        line = line[lead : lead + SNIPPET]
    return line


@dataclass(frozen=True, slots=True)
class Hit:
    """A literal match: its UTF-16 offset, 1-based line and snippet."""

    offset: int
    line: int
    snippet: str


@dataclass(frozen=True, slots=True)
class PagedText:
    """A stored output read by ranges through its page index."""

    blobs: Blobs
    digest: str
    index: PageIndex

    @property
    def units(self) -> int:
        """Total length in UTF-16 units."""
        return self.index.total_units

    @property
    def _last(self) -> int:
        return len(self.index.byte_at) - 1

    def _point(self, unit: int) -> int:
        return max(0, bisect.bisect_right(self.index.unit_at, unit) - 1)

    def _window(self, read: ReadRange, first: int, last: int) -> Utf16Text:
        """The text from point `first` to point `last`."""
        start, end = self.index.byte_at[first], self.index.byte_at[last]
        return Utf16Text.of(_text(read(start, end)))

    def slice(self, start: int, end: int) -> tuple[str, int, int]:
        """The text between two unit offsets, aligned as `Utf16Text.slice` aligns them."""
        start = min(max(start, 0), self.units)
        end = min(max(end, start), self.units)
        first = self._point(start)
        last = min(self._last, self._point(end) + 1)
        base = self.index.unit_at[first]
        with self.blobs.blob_ranges(self.digest) as read:
            window = self._window(read, first, last)
        text, a, b = window.slice(start - base, end - base)
        return text, a + base, b + base

    def whole_text(self) -> str:
        """The whole text (a regex search needs it)."""
        with self.blobs.blob_ranges(self.digest) as read:
            data = read(0, self.index.size)
        return data.decode("utf-8", errors="replace")

    def find(self, needle: str, start_unit: int, limit: int) -> tuple[list[Hit], int | None]:
        """Up to `limit` non-overlapping matches of `needle` from `start_unit` on, and the unit
        offset of the next one when there are more (else None).

        Raises:
            ValueError: `needle` is too long to search by pieces (search the whole text).
        """
        if utf16_len(needle) > MAX_NEEDLE_UNITS:
            raise ValueError("needle too long for a search by pieces")
        with self.blobs.blob_ranges(self.digest) as read:
            found = _Search(self, read, needle, limit)
            return found.run(start_unit)


_REPLACED = "\ufffd"


def _text(raw: bytes) -> str:
    """Bytes between two decoder-clean places, decoded as the whole text decodes them."""
    return raw.decode("utf-8", errors="replace")


class _Search:
    """One literal search, a piece of `_GROUP` strides at a time (see the module docstring).

    Each piece is read with one stride of margin either side, so the window a hit's offset,
    line and snippet come from (the strides before, at and after the hit) is in hand.
    """

    def __init__(self, paged: PagedText, read: ReadRange, needle: str, limit: int) -> None:
        self.index = paged.index
        self.read = read
        self.needle = needle
        self.limit = limit
        self.length = utf16_len(needle)
        self.last = len(self.index.byte_at) - 1
        self.hits: list[Hit] = []

    def _before(self, at: int) -> int:
        """The last point at least `_MARGIN` bytes before byte `at` (or the first point)."""
        return max(0, bisect.bisect_right(self.index.byte_at, at - _MARGIN) - 1)

    def _after(self, at: int) -> int:
        """The first point at least `_MARGIN` bytes after byte `at` (or the last point)."""
        return min(self.last, bisect.bisect_left(self.index.byte_at, at + _MARGIN))

    def _bounds(self, point: int) -> tuple[int, int, int]:
        """(first, end, stop): margin start, piece end and margin end points of a piece."""
        at = self.index.byte_at
        end = min(self.last, point + _GROUP)
        return self._before(at[point]), end, self._after(at[end])

    def _stride_text(self, raw: bytes, base: int, point: int) -> str:
        at = self.index.byte_at
        return _text(raw[at[point] - base : at[point + 1] - base])

    def _found(self, offset: int, hit: Hit) -> int | None:
        """Record a hit; returns the offset to report as the next one once the limit is hit."""
        if len(self.hits) == self.limit:
            return offset
        self.hits.append(hit)
        return None

    def run(self, start_unit: int) -> tuple[list[Hit], int | None]:
        resume = min(max(start_unit, 0), self.index.total_units)
        try:
            pattern = self.needle.encode("utf-8")
        except UnicodeEncodeError:
            return [], None  # a lone surrogate: no text decoded from bytes holds one
        # Moved back off the middle of a surrogate pair, as the whole-text search does.
        point = max(0, bisect.bisect_right(self.index.unit_at, resume) - 1)
        if point < self.last:
            at = self.index.byte_at
            stride = Utf16Text.of(_text(self.read(at[point], at[point + 1])))
            resume = self.index.unit_at[point] + stride.align(resume - self.index.unit_at[point])
        if self.index.utf8 or _REPLACED not in self.needle:
            more = self._run_bytes(pattern, resume)
        else:
            more = self._run_text(resume)
        return self.hits, more

    def _run_bytes(self, pattern: bytes, resume: int) -> int | None:
        """Find the needle's bytes; a hit is mapped back to the text.

        Exact unless the needle holds U+FFFD and the output is not valid UTF-8: a needle's
        bytes start with a byte no undecodable run can swallow (never a continuation byte)
        and are whole characters, so they match the raw bytes exactly where the needle
        matches the text.
        """
        index = self.index
        point = max(0, bisect.bisect_right(index.unit_at, resume) - 1)
        after = 0  # no match may start before this byte (the end of the last hit)
        while point < self.last:
            first, end, stop = self._bounds(point)
            base = index.byte_at[first]
            raw = self.read(base, index.byte_at[stop])
            # A match starts a character, so the text before it decodes on its own: units are
            # counted from the last place known (a point, then each match) to the next match.
            known, units = index.byte_at[point], index.unit_at[point]
            found = raw.find(pattern, max(after, known) - base)
            while found != -1 and found + base < index.byte_at[end]:
                units += utf16_len(_text(raw[known - base : found]))
                known = found + base
                if units < resume:
                    # Before the offset asked for (only in its own stride): a match may still
                    # start inside this one.
                    found = raw.find(pattern, found + 1)
                    continue
                lo, hi = self._before(known), self._after(known)
                window = _text(raw[index.byte_at[lo] - base : index.byte_at[hi] - base])
                at = len(_text(raw[index.byte_at[lo] - base : found]))
                line = index.lines_at[lo] + window.count("\n", 0, at) + 1
                more = self._found(units, Hit(units, line, snippet_of(window, at, lo == 0)))
                if more is not None:
                    return more
                after = known + len(pattern)
                found = raw.find(pattern, found + len(pattern))
            point = end
        return None

    def _run_text(self, resume: int) -> int | None:
        """A needle holding U+FFFD in an output that is not valid UTF-8: find it in each
        piece's decoded text (where undecodable bytes became U+FFFD)."""
        index = self.index
        point = max(0, bisect.bisect_right(index.unit_at, resume) - 1)
        while point < self.last:
            first, end, stop = self._bounds(point)
            base = index.byte_at[first]
            raw = self.read(base, index.byte_at[stop])
            strides = [self._stride_text(raw, base, p) for p in range(first, stop)]
            # char_at[i]: index in `text` of point first + i.
            char_at = [0]
            for stride in strides:
                char_at.append(char_at[-1] + len(stride))
            text = "".join(strides)
            k = max(point, bisect.bisect_right(index.unit_at, resume) - 1)
            if k < end:
                at_k = Utf16Text.of(strides[k - first])
                begin = char_at[k - first] + at_k.index_of_unit(resume - index.unit_at[k])
            else:
                begin = char_at[end - first]
            found = text.find(self.needle, begin)
            while found != -1 and found < char_at[end - first]:
                k = bisect.bisect_right(char_at, found) - 1
                offset = index.unit_at[first + k] + utf16_len(text[char_at[k] : found])
                line = index.lines_at[first + k] + text.count("\n", char_at[k], found) + 1
                more = self._found(offset, Hit(offset, line, snippet_of(text, found, first == 0)))
                if more is not None:
                    return more
                resume = offset + self.length
                found = text.find(self.needle, found + len(self.needle))
            point = end
        return None
