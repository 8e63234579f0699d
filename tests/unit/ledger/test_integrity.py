"""Append-only enforcement, verification of tampered data, file modes and schema gating."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from comal.errors import LedgerError, SchemaTooNewError
from comal.ledger import Ledger
from comal.ledger.salvage import verify_file
from comal.ledger.schema import MIGRATIONS, SCHEMA_VERSION, check_readable


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _populated(path: Path) -> str:
    with Ledger.open(path) as ledger:
        sid = ledger.create_session(cwd="/w")
        ledger.append(sid, "message.user", {"text": "hello"})
        ledger.append(sid, "tool.result", {"call_id": "c"}, body=b"output bytes")
    return sid


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE entries SET payload = '{}'",
        "UPDATE entries SET kind = 'x' WHERE seq = 1",
        "DELETE FROM entries",
        "DELETE FROM entries WHERE seq = 2",
        "UPDATE blobs SET data = x'00'",
        "DELETE FROM blobs",
    ],
)
def test_update_and_delete_are_refused(ledger_path: Path, statement: str) -> None:
    sid = _populated(ledger_path)
    conn = _raw(ledger_path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute(statement)
    conn.close()
    with Ledger.open(ledger_path) as ledger:
        assert len(ledger.entries(sid)) == 2
        assert ledger.verify().ok


def test_replace_cannot_overwrite_an_entry(ledger_path: Path) -> None:
    _populated(ledger_path)
    conn = _raw(ledger_path)
    conn.execute("PRAGMA recursive_triggers = ON")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute(
            "INSERT OR REPLACE INTO entries (seq, id, session_id, kind, payload, content_hash,"
            " created_at) SELECT seq, id, session_id, kind, '{}', content_hash, created_at"
            " FROM entries WHERE seq = 1"
        )
    conn.close()


def test_verify_reports_tampered_entries_and_blobs(ledger_path: Path) -> None:
    sid = _populated(ledger_path)
    conn = _raw(ledger_path)
    for trigger in ("entries_no_update", "blobs_no_update"):
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("""UPDATE entries SET payload = '{"text":"forged"}' WHERE seq = 1""")
    conn.execute("UPDATE blobs SET data = x'00'")
    conn.close()

    with Ledger.open(ledger_path) as ledger:
        whole = ledger.verify()
        scoped = ledger.verify(sid)
    for report in (whole, scoped):
        assert not report.ok
        assert (report.entries, report.blobs) == (2, 1)
        assert any("seq 1" in p and "content hash mismatch" in p for p in report.problems)
        assert any(p.startswith("blob sha256:") for p in report.problems)
        # The entry whose body blob is damaged is damaged too: both are listed by id.
        assert any("seq 2): body blob" in p and "damaged" in p for p in report.problems)
        assert len(report.problems) == 3
        assert len(report.damaged) == 2
        assert all(name.startswith("evt_") for name in report.damaged)


def test_verify_reports_a_missing_body_blob_and_noncanonical_payload(ledger_path: Path) -> None:
    sid = _populated(ledger_path)
    conn = _raw(ledger_path)
    conn.execute("DROP TRIGGER blobs_no_delete")
    conn.execute("DELETE FROM blobs")
    conn.execute("DROP TRIGGER entries_no_update")
    conn.execute("""UPDATE entries SET payload = '{"text": "hello"}' WHERE seq = 1""")
    conn.close()
    with Ledger.open(ledger_path) as ledger:
        report = ledger.verify(sid)
    assert not report.ok
    assert any("seq 2): body blob" in p and "missing" in p for p in report.problems)
    assert any("seq 1" in p and "not canonical" in p for p in report.problems)


def test_files_are_private(ledger_path: Path) -> None:
    with Ledger.open(ledger_path) as ledger:
        ledger.append(ledger.create_session(cwd="/w"), "message.user", {})
        names = sorted(p.name for p in ledger_path.parent.iterdir())
        assert names == ["ledger.db", "ledger.db-shm", "ledger.db-turn", "ledger.db-wal"]
        for path in ledger_path.parent.iterdir():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(ledger_path.parent.stat().st_mode) == 0o700


def test_migrations_are_recorded_once(ledger_path: Path) -> None:
    _populated(ledger_path)
    conn = _raw(ledger_path)
    first = conn.execute("SELECT name, applied_at FROM migrations").fetchall()
    conn.close()
    Ledger.open(ledger_path).close()
    conn = _raw(ledger_path)
    assert conn.execute("SELECT name, applied_at FROM migrations").fetchall() == first
    assert [name for name, _ in first] == [m.__name__ for m in MIGRATIONS]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    strict = {row[1] for row in conn.execute("PRAGMA table_list") if row[5] == 1}
    assert strict == {"sessions", "entries", "blobs", "blob_pages", "locks", "migrations"}
    conn.close()


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.mark.parametrize(
    "upgrade",
    [
        f"PRAGMA user_version = {SCHEMA_VERSION + 1}",
        "INSERT INTO migrations (name, applied_at) VALUES ('m999_future', 0)",
    ],
)
def test_newer_schema_is_refused_untouched(ledger_path: Path, upgrade: str) -> None:
    sid = _populated(ledger_path)
    conn = _raw(ledger_path)
    conn.execute(upgrade)
    conn.execute("PRAGMA journal_mode = DELETE")  # fold the WAL in so the file is the whole ledger
    conn.close()
    before = ledger_path.read_bytes()

    with pytest.raises(SchemaTooNewError, match="newer Comal") as refused:
        Ledger.open(ledger_path)
    assert str(ledger_path) in refused.value.message
    assert ledger_path.read_bytes() == before
    conn = _raw(ledger_path)
    assert (
        conn.execute("SELECT count(*) FROM entries WHERE session_id = ?", (sid,)).fetchone()[0] == 2
    )
    conn.close()


def test_garbage_file_is_refused_untouched(ledger_path: Path) -> None:
    ledger_path.parent.mkdir(parents=True)
    ledger_path.write_bytes(b"this is not a database\n" * 100)
    before = _snapshot(ledger_path.parent)
    with pytest.raises(LedgerError, match="not a Comal ledger"):
        Ledger.open(ledger_path)
    assert _snapshot(ledger_path.parent) == before


def test_foreign_sqlite_database_is_refused_untouched(ledger_path: Path) -> None:
    ledger_path.parent.mkdir(parents=True)
    conn = _raw(ledger_path)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()
    before = ledger_path.read_bytes()
    with pytest.raises(LedgerError, match="not a Comal ledger"):
        Ledger.open(ledger_path)
    assert ledger_path.read_bytes() == before


def test_read_only_probe_defers_a_ledger_shaped_file_to_the_locked_check(
    ledger_path: Path,
) -> None:
    # A read-only look after a killed writer may see a torn snapshot, so the probe does not
    # refuse a file that has Comal's `migrations` table; the check under the write lock does.
    ledger_path.parent.mkdir(parents=True)
    conn = _raw(ledger_path)
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()
    check_readable(ledger_path)
    with pytest.raises(LedgerError, match="not a Comal ledger"):
        Ledger.open(ledger_path)


def test_a_damaged_migration_name_is_a_named_error_not_a_traceback(ledger_path: Path) -> None:
    # Damage can make a name read as NULL (found by the damage fuzz); the file is refused
    # with a LedgerError by the write path and by verify, and left untouched.
    ledger_path.parent.mkdir(parents=True)
    conn = _raw(ledger_path)
    conn.execute("CREATE TABLE migrations (name, applied_at)")
    conn.execute("INSERT INTO migrations VALUES (NULL, 0), ('m001_initial', 0)")
    conn.close()
    before = ledger_path.read_bytes()
    with pytest.raises(LedgerError, match="damaged migrations table"):
        Ledger.open(ledger_path)
    with pytest.raises(LedgerError, match="damaged migrations table"):
        verify_file(ledger_path)
    assert ledger_path.read_bytes() == before


def test_a_seq_flipped_far_past_the_end_is_read_not_searched_for(ledger_path: Path) -> None:
    # One damaged seq can be any 64-bit number: verify must not look for every seq below it
    # (that took all the machine's memory), yet still report the seq that went missing and
    # let salvage keep the moved row, which is otherwise intact.
    sid = _populated(ledger_path)
    conn = _raw(ledger_path)
    conn.execute("DROP TRIGGER entries_no_update")
    conn.execute("UPDATE entries SET seq = 5000000 WHERE seq = 1")
    conn.close()
    report = verify_file(ledger_path)
    assert not report.ok
    assert any("entry seq 1: missing" in p for p in report.problems)
    assert len(report.problems) < 10
    out = ledger_path.parent / "salvaged.db"
    with Ledger.open(out) as ledger:
        ledger.salvage_from(ledger_path)
        kinds = [e.kind for e in ledger.entries(sid)]
    assert "message.user" in kinds


@pytest.mark.parametrize("serial_type", [0, 1, 7, 12, 13, 24, 25])
def test_an_unreadable_creation_time_is_reported_but_loses_no_entry(
    ledger_path: Path, serial_type: int
) -> None:
    # The creation time is not hashed: one whose type byte is flipped is reported but is no
    # reason to drop an entry whose content still hashes to its record. Most flips (to NULL, a
    # 1-byte or 8-byte number, an empty blob or text) make the row malformed for SQLite; to a
    # blob or text of the same 6 bytes (24, 25) it reads, as no integer.
    sid = _populated(ledger_path)
    conn = _raw(ledger_path)
    conn.execute("PRAGMA journal_mode = DELETE")  # every row in the one file
    (entry_id,) = conn.execute("SELECT id FROM entries WHERE seq = 2").fetchone()
    conn.close()
    data = bytearray(ledger_path.read_bytes())
    needle = entry_id.encode()
    # The table's record holds the id right after its header, whose last serial type is the
    # creation time's (a 6-byte integer, type 5); the index's record has the seq's before it.
    at = next(i for i in range(len(data)) if data.startswith(needle, i) and data[i - 1] == 5)
    data[at - 1] = serial_type
    ledger_path.write_bytes(bytes(data))
    report = verify_file(ledger_path)
    assert not report.ok
    assert report.damaged == ()
    if serial_type in (24, 25):
        assert any("seq 2): creation time unreadable" in p for p in report.problems)
    out = ledger_path.parent / "salvaged.db"
    with Ledger.open(out) as ledger:
        ledger.salvage_from(ledger_path)
        assert [e.kind for e in ledger.entries(sid)][-2:] == ["message.user", "tool.result"]


def _patch_index_session(path: Path, sid: str, seq: int) -> None:
    """Flip one byte of `sid` in the entries_by_session record of entry `seq` only."""
    data = bytearray(path.read_bytes())
    needle = sid.encode()
    # An index record: its header (its size, the text's type, then 1-byte integers for the
    # seq and the rowid it points to), the session id, the seq, the rowid (the same seq).
    at = next(
        i
        for i in range(len(data))
        if data.startswith(needle, i)
        and data[i - 4 : i] == bytes([4, len(needle) * 2 + 13, 1, 1])
        and data[i + len(needle) : i + len(needle) + 2] == bytes([seq, seq])
    )
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_an_entry_whose_session_row_and_index_are_both_damaged_is_kept_as_a_doubt(
    ledger_path: Path,
) -> None:
    # A child's only entry: its session row is gone and the index files it under a flipped
    # session id. Nothing says which copy of the session id is right, so the table's row
    # stands (reported as a doubt) rather than an intact entry being dropped.
    with Ledger.open(ledger_path) as ledger:
        parent = ledger.create_session(cwd="/w")
        ledger.append(parent, "message.user", {"text": "hello"})
        child = ledger.create_session(cwd="/w", parent_id=parent)
        entry = ledger.append(child, "message.user", {"text": "only entry"})
    conn = _raw(ledger_path)
    conn.execute("PRAGMA journal_mode = DELETE")
    (seq,) = conn.execute("SELECT seq FROM entries WHERE id = ?", (entry.id,)).fetchone()
    conn.execute("DELETE FROM sessions WHERE id = ?", (child,))
    conn.close()
    _patch_index_session(ledger_path, child, seq)
    report = verify_file(ledger_path)
    assert not report.ok
    assert entry.id in report.damaged
    assert any("disagrees with the ledger's index" in p for p in report.problems)
    out = ledger_path.parent / "salvaged.db"
    with Ledger.open(out) as ledger:
        ledger.salvage_from(ledger_path)
        assert [e.id for e in ledger.entries(child)] == [entry.id]
