"""The preview of a large output built through its page index equals the whole-text preview.

`paged_preview_text` never holds the whole output; `preview_text` is the rule it must match
byte for byte: head, tail, the lines of note chosen from the hidden middle (tracebacks, errors,
definitions, `path:line` mentions, repeated lines once), their line numbers, the unit offsets
and the invalid-UTF-8 note. Strides are made small so that outputs of tens of kilobytes are
read in many pieces, cutting lines, CRLF pairs and characters anywhere.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.context.view.preview_paged import paged_preview_text, paged_reference_text
from comal.context.view.rendering import ResultFacts, preview_text, reference_text
from comal.ledger.pages import INDEX_MIN_BYTES, index_of_bytes, write_page_index
from comal.ledger.store import Ledger
from comal.session import PagedText, pageable

LINES = [
    "2026-01-01T00:00:00Z INFO worker ok item processed\n",
    "Traceback (most recent call last):\n",
    '  File "src/pkg/mod.py", line 12, in run\n',
    "    return compute(x)\n",
    "ValueError: bad value 😀\n",
    "src/pkg/mod.py:40: warning: unused\n",
    "def handler(event):\n",
    "FAILED tests/test_mod.py::test_run - assert 1 == 2\n",
    "error: something went wrong\r\n",
    "\n",
    "   \n",
    "line with a lone\rcarriage return\n",
    "ünïcödé \u2028 separator\x85 and \x0b vertical tab\n",
    "x" * 300 + " error in a long line\n",
    "class Thing:\n",
]
BYTES = [b"\xff", b"\xe2\x82", "😀".encode()[:3]]

pieces_st = st.lists(
    st.one_of(
        st.sampled_from(LINES).map(str.encode),
        st.sampled_from(BYTES),
        st.integers(0, 999).map(lambda n: f"step {n} done\n".encode()),
    ),
    min_size=1,
    max_size=40,
)


def _paged(ledger: Ledger, body: bytes, stride: int) -> tuple[ResultFacts, PagedText]:
    digest = ledger.put_blob(body)
    conn = sqlite3.connect(ledger.path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    write_page_index(conn, digest, index_of_bytes(body, stride))
    conn.execute("COMMIT")
    conn.close()
    facts = ResultFacts("evt_" + "a" * 32, "Bash", len(body), 1, "ok", digest)
    return facts, PagedText(ledger, digest, ledger.page_index(digest))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    head=pieces_st,
    middle=pieces_st,
    tail=pieces_st,
    repeat=st.integers(1, 200),
    stride=st.sampled_from([61, 997, 4_096, 65_536]),
    chars=st.sampled_from([2_048, 4_096, 16_384]),
)
def test_the_paged_preview_equals_the_whole_text_preview(
    ledger: Ledger,
    head: list[bytes],
    middle: list[bytes],
    tail: list[bytes],
    repeat: int,
    stride: int,
    chars: int,
) -> None:
    filler = b"".join(f"plain line {i}\n".encode() for i in range(40 * repeat))
    body = b"".join(head) + filler + b"".join(middle) * repeat + filler + b"".join(tail)
    facts, paged = _paged(ledger, body, stride)
    assert paged_preview_text(facts, paged, chars) == preview_text(facts, body, chars)
    assert paged_reference_text(facts, paged) == reference_text(facts, body)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=pieces_st, stride=st.sampled_from([1, 7, 61]))
def test_the_paged_reference_of_a_few_lines_equals_the_whole_text_reference(
    ledger: Ledger, lines: list[bytes], stride: int
) -> None:
    # Few lines: the first, last and salient lines overlap in every way.
    body = b"".join(lines)
    facts, paged = _paged(ledger, body, stride)
    assert paged_reference_text(facts, paged) == reference_text(facts, body)


def test_a_large_output_is_previewed_through_its_index(tmp_path: Path) -> None:
    body = (
        b"start\n"
        + b"".join(f"{i} ok\n".encode() for i in range(INDEX_MIN_BYTES // 8))
        + b'Traceback (most recent call last):\n  File "a.py", line 3, in f\n    g()\n'
        + b"ValueError: boom\n"
        + b"".join(f"{i} ok\n".encode() for i in range(1_000))
    )
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        digest = ledger.put_blob(body)
        paged = pageable(ledger, digest)
        assert paged is not None
        assert pageable(ledger, ledger.put_blob(b"small")) is None
        facts = ResultFacts("evt_" + "b" * 32, "Bash", len(body), 0, "ok", digest)
        text = paged_preview_text(facts, paged, 16_384)
        reference = paged_reference_text(facts, paged)
    assert text == preview_text(facts, body, 16_384)
    assert reference == reference_text(facts, body)
    assert "Traceback (most recent call last):" in reference
    assert "ValueError: boom" in text
