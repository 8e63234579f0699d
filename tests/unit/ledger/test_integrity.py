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
        assert names == ["ledger.db", "ledger.db-shm", "ledger.db-wal"]
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
