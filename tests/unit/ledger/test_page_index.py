"""The page index of large blobs: stored with the blob, kept across reopen, built for blobs
written before it existed, and never trusted when damaged (rebuilt, reported by verify)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from comal.evidence.read import read_evidence
from comal.ledger.canonical import content_hash, encode_payload
from comal.ledger.pages import INDEX_MIN_BYTES, index_of_bytes, stored_page_index
from comal.ledger.salvage import verify_file
from comal.ledger.schema import SCHEMA_VERSION, m001_initial, m002_forks
from comal.ledger.store import Ledger
from comal.messages import JSONObject, digest_bytes
from comal.session import Utf16Text, paged
from comal.testing.sessions import SessionBuilder
from tests.pg_support import raw_conn

# Over the index threshold, with astral characters, CRLF and an invalid byte now and then.
LINE = "ok 😀 ünï line\r\n".encode()
BODY = b"".join(LINE + (b"\xff" if i % 97 == 0 else b"") for i in range(INDEX_MIN_BYTES // 18))


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _rows(target: str | Path) -> list[tuple[str, bytes]]:
    with raw_conn(target) as conn:
        return [(str(h), bytes(p)) for h, p in conn.execute("SELECT hash, points FROM blob_pages")]


def _expected_page(offset: int) -> str:
    return Utf16Text.of(BODY.decode("utf-8", errors="replace")).slice(offset, offset + 8_000)[0]


def _store(path: str | Path) -> tuple[str, str, str]:
    with Ledger.open(path) as ledger:
        builder = SessionBuilder(ledger)
        builder.user("dump")
        (result,) = builder.turn("", [("Bash", {"command": "cat log"}, BODY, 0)])
        assert result.body_hash is not None
        return builder.session_id, result.id, result.body_hash


def test_a_large_blob_is_stored_with_its_index_which_survives_reopen(ledger_target: str) -> None:
    path = ledger_target
    sid, ref, digest = _store(path)
    assert [d for d, _ in _rows(path)] == [digest]
    with Ledger.open(path) as ledger:
        assert ledger.page_index(digest) == index_of_bytes(BODY)
        paged._MEMO.clear()
        total = read_evidence(ledger, sid, ref).total_units
        for offset in (0, total // 2, total - 3):
            assert read_evidence(ledger, sid, ref, offset=offset).text == _expected_page(offset)
    # Reading wrote nothing: the stored row was used as it was.
    assert _rows(path) == [(digest, index_of_bytes(BODY).encode())]


def test_small_blobs_get_no_index(ledger_target: str) -> None:
    with Ledger.open(ledger_target) as ledger:
        ledger.put_blob(b"x" * (INDEX_MIN_BYTES - 1))
    assert _rows(ledger_target) == []


def _v2_ledger(path: Path) -> tuple[str, str, str]:
    """A ledger as the previous schema wrote it: no page index table, a large output."""
    conn = _raw(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
    for migration in (m001_initial, m002_forks):
        migration(conn)
        conn.execute("INSERT INTO migrations VALUES (?, 0)", (migration.__name__,))
    conn.execute("PRAGMA user_version = 2")
    sid = "01900000-0000-7000-8000-000000000001"
    conn.execute(
        "INSERT INTO sessions (id, cwd, model, title, source, status, created_at,"
        " last_activity_at) VALUES (?, '/w', 'm', '', 'comal', 'finished', 0, 0)",
        (sid,),
    )
    digest = digest_bytes(BODY)
    conn.execute("INSERT INTO blobs VALUES (?, ?, ?)", (digest, len(BODY), BODY))
    payload: JSONObject = {"call_id": "c1", "name": "Bash", "status": "ok", "exit_code": 0}
    payload["body"] = {"blob": digest, "size_bytes": len(BODY)}
    text = encode_payload(payload)[0]
    ref = "evt_" + "0" * 31 + "1"
    conn.execute(
        "INSERT INTO entries (id, session_id, kind, payload, content_hash, created_at)"
        " VALUES (?, ?, 'tool.result', ?, ?, 0)",
        (ref, sid, text, content_hash("tool.result", text)),
    )
    conn.execute("COMMIT")
    conn.close()
    return sid, ref, digest


def test_an_old_ledger_upgrades_and_its_blobs_page_exactly(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    sid, ref, digest = _v2_ledger(path)
    with Ledger.open(path) as ledger:
        conn = _raw(path)
        names = [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY name")]
        assert names == ["m001_initial", "m002_forks", "m003_page_index", "m004_leases"]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        conn.close()
        assert _rows(path) == []
        paged._MEMO.clear()
        page = read_evidence(ledger, sid, ref, offset=300_001)
        assert page.text == _expected_page(300_001)
        assert page.digest == digest
        # The first read built the index and stored it for the next process.
        assert _rows(path) == [(digest, index_of_bytes(BODY).encode())]
        assert ledger.verify().ok


def test_a_damaged_index_is_reported_rebuilt_and_never_read(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    sid, ref, digest = _store(path)
    ((_, points),) = _rows(path)
    conn = _raw(path)
    # One unit offset moved by one: the shape still holds, only the checksum tells.
    flipped = bytearray(points)
    flipped[24 * 5 + 8] ^= 1
    conn.execute("UPDATE blob_pages SET points = ?", (bytes(flipped),))
    conn.close()
    report = verify_file(path)
    assert not report.ok
    assert any(f"page index of blob {digest}" in p for p in report.problems)
    assert report.damaged == ()  # no entry is damaged by it
    with Ledger.open(path) as ledger:
        raw = _raw(path)
        assert stored_page_index(raw, digest, len(BODY)) is None
        raw.close()
        paged._MEMO.clear()
        total = read_evidence(ledger, sid, ref).total_units
        assert total == Utf16Text.of(BODY.decode("utf-8", errors="replace")).units
        for offset in (0, 5 * 65_536, total - 1):
            assert read_evidence(ledger, sid, ref, offset=offset).text == _expected_page(offset)
    # Rebuilt and stored again: the ledger verifies.
    assert _rows(path) == [(digest, index_of_bytes(BODY).encode())]
    assert verify_file(path).ok


def test_an_index_of_the_wrong_shape_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    _, _, digest = _store(path)
    conn = _raw(path)
    assert stored_page_index(conn, digest, len(BODY)) == index_of_bytes(BODY)
    # Checks its own checksum, but not the blob's size: refused.
    assert stored_page_index(conn, digest, len(BODY) + 1) is None
    conn.close()


def test_salvage_rebuilds_the_index_of_every_large_blob(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    _, _, digest = _store(source)
    conn = _raw(source)
    conn.execute("DELETE FROM blob_pages")
    conn.close()
    with Ledger.open(tmp_path / "copy.db") as copy:
        report = copy.salvage_from(source)
        assert report.entries > 0
    assert _rows(tmp_path / "copy.db") == [(digest, index_of_bytes(BODY).encode())]
    assert verify_file(tmp_path / "copy.db").ok
