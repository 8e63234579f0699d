"""Paging through a blob's page index gives exactly what a whole decode gives.

The stride is made small here (a few bytes to a few kilobytes) so that small outputs have many
points: every page, search hit, line number and snippet read through the index must equal the
whole-text path's (the text decoded as UTF-8 with U+FFFD, sliced by UTF-16 units), for text
with astral characters, CRLF, U+FFFD itself, invalid UTF-8 and binary bytes.
"""

from __future__ import annotations

import re
import sqlite3

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.evidence.read import MAX_HITS, read_evidence
from comal.ledger.pages import build_page_index, index_of_bytes, write_page_index
from comal.ledger.store import Ledger
from comal.session import PagedText, Utf16Text
from comal.testing.sessions import SessionBuilder

SEGMENTS = [
    b"a",
    b"line ",
    b"needle",
    b"\n",
    b"\r\n",
    "ü".encode(),
    "😀".encode(),
    "\ufffd".encode(),
    b"\xff",
    b"\xe2\x82",  # a cut 3-byte character
    b"\xf0\x9f\x98",  # a cut emoji
    b"\xed\xa0\x80",  # an encoded surrogate (invalid in UTF-8)
    b"\xc0\xaf",  # an overlong form
    b"\x00",
]
data_st = st.lists(st.one_of(st.sampled_from(SEGMENTS), st.binary(max_size=6)), max_size=120).map(
    b"".join
)
NEEDLES = ["needle", "a", "\n", "\r\n", "ü", "😀", "\ufffd", "line n", "\ufffd\n", "\ud83d"]


def _indexed(
    ledger: Ledger, builder: SessionBuilder, data: bytes, stride: int
) -> tuple[str, PagedText]:
    """A tool result holding `data`, and its output paged through an index of `stride`."""
    (entry,) = builder.turn("", [("Bash", {"command": "cat"}, data, 0)])
    digest = entry.body_hash
    assert digest is not None
    conn = sqlite3.connect(ledger.path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    write_page_index(conn, digest, index_of_bytes(data, stride))
    conn.execute("COMMIT")
    conn.close()
    return entry.id, PagedText(ledger, digest, ledger.page_index(digest))


def _check_pages(paged: PagedText, data: bytes, offsets: list[int], limit: int) -> None:
    whole = Utf16Text.of(data.decode("utf-8", errors="replace"))
    assert paged.units == whole.units
    for offset in [0, whole.units, *offsets]:
        assert paged.slice(offset, offset + limit) == whole.slice(offset, offset + limit)


def _check_search(
    ledger: Ledger, builder: SessionBuilder, ref: str, paged: PagedText, needle: str, start: int
) -> None:
    # The reference: the whole-text search (a small output is never paged), as a regex of the
    # escaped literal.
    expected = read_evidence(
        ledger, builder.session_id, ref, search=re.escape(needle), regex=True, offset=start
    )
    hits, more = paged.find(needle, start, MAX_HITS)
    assert [(h.offset, h.line, h.snippet) for h in hits] == [
        (h.offset, h.line, h.snippet) for h in expected.hits
    ]
    assert more == (expected.next_call or {}).get("offset")


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=data_st,
    stride=st.integers(1, 40),
    offsets=st.lists(st.integers(0, 2_000), max_size=6),
    limit=st.integers(1, 300),
    needle=st.sampled_from(NEEDLES),
    start=st.integers(0, 600),
)
def test_pages_and_searches_through_the_index_equal_the_whole_decode(
    ledger: Ledger,
    builder: SessionBuilder,
    data: bytes,
    stride: int,
    offsets: list[int],
    limit: int,
    needle: str,
    start: int,
) -> None:
    ref, paged = _indexed(ledger, builder, data, stride)
    total = paged.units
    _check_pages(paged, data, [min(o, total) for o in offsets], limit)
    _check_search(ledger, builder, ref, paged, needle, min(start, total))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=data_st,
    repeat=st.integers(150, 400),
    stride=st.sampled_from([97, 1_000, 4_096]),
    needle=st.sampled_from(NEEDLES),
    start=st.integers(0, 50_000),
)
def test_long_outputs_with_long_lines_page_and_search_exactly(
    ledger: Ledger,
    builder: SessionBuilder,
    data: bytes,
    repeat: int,
    stride: int,
    needle: str,
    start: int,
) -> None:
    # Tens of kilobytes, so a search reads several pieces whose windows start mid-text, and
    # lines run past a snippet's length (the newline-free segments repeat).
    body = data.replace(b"\n", b"") * repeat + b"\n" + data * 3
    ref, paged = _indexed(ledger, builder, body, stride)
    total = paged.units
    _check_pages(paged, body, [total // 3, total // 2, max(0, total - 7)], 8_000)
    _check_search(ledger, builder, ref, paged, needle, min(start, total))


def test_a_needle_far_into_a_long_line_gets_the_whole_text_snippet(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    line = ("x" * 3_000 + "needle" + "😀" * 500) * 20
    body = ("head\n" + line + "\nneedle at the end\n").encode()
    ref, paged = _indexed(ledger, builder, body, 333)
    for start in (0, 1, 40_000, paged.units - 30):
        _check_search(ledger, builder, ref, paged, "needle", start)


def test_every_point_is_a_clean_cut_of_the_whole_text() -> None:
    # Over two read pieces (1 MiB each), characters of every width, undecodable bytes, and a
    # run of stray continuation bytes longer than a stride across the first piece's end.
    pattern = "é😀\r\n".encode() + b"\xe2\x82\xff" + "ü".encode()
    data = pattern * (1_048_000 // len(pattern)) + b"\x80" * 900 + pattern * 60_000
    calls: list[tuple[int, int]] = []

    def read(start: int, end: int) -> bytes:
        calls.append((start, end))
        return data[start:end]

    index = build_page_index(len(data), read, 64)
    assert len(calls) > 1
    whole = data.decode("utf-8", errors="replace")
    texts = []
    for i in range(len(index.byte_at) - 1):
        a, b = index.byte_at[i], index.byte_at[i + 1]
        assert b - a >= 64 or b == len(data)
        assert a == 0 or data[a] & 0xC0 != 0x80
        text = data[a:b].decode("utf-8", errors="replace")
        assert index.unit_at[i + 1] - index.unit_at[i] == Utf16Text.of(text).units
        assert index.lines_at[i + 1] - index.lines_at[i] == text.count("\n")
        texts.append(text)
    assert "".join(texts) == whole
    assert index.total_units == Utf16Text.of(whole).units
    assert not index.utf8
    assert index_of_bytes("é😀\n".encode() * 100, 7).utf8
    assert index_of_bytes(b"", 7).byte_at == (0,)
