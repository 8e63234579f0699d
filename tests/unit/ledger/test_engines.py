"""The rules both engines keep in the database itself: append-only tables, the same named
migrations, the version gate, verify and salvage across engines; and PostgreSQL's writer role."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from comal.config import load_config
from comal.errors import ConfigError, LedgerError, SchemaTooNewError
from comal.ledger import Ledger
from comal.ledger.engine import is_pg_url
from comal.ledger.pg_schema import WRITER_ROLE
from comal.ledger.schema import MIGRATIONS
from tests.pg_support import fresh_schema, raw_conn, server_url
from tests.pg_support import ledger_target as engine_target

REFUSED = (sqlite3.DatabaseError, psycopg.Error)


def _written(target: str) -> tuple[str, str, str]:
    with Ledger.open(target) as ledger:
        sid = ledger.create_session(cwd="/w")
        ledger.append(sid, "message.user", {"text": "kept"})
        entry = ledger.append(sid, "tool.result", {"call_id": "c1"}, body=b"output \xff")
        assert entry.body_hash is not None
        return sid, entry.id, entry.body_hash


def test_entries_and_blobs_cannot_be_changed_or_removed_in_the_database(
    ledger_target: str,
) -> None:
    sid, entry_id, digest = _written(ledger_target)
    attempts: list[tuple[str, tuple[str, ...]]] = [
        ("UPDATE entries SET kind = 'x' WHERE id = ?", (entry_id,)),
        ("DELETE FROM entries WHERE id = ?", (entry_id,)),
        ("UPDATE blobs SET size_bytes = 0 WHERE hash = ?", (digest,)),
        ("DELETE FROM blobs WHERE hash = ?", (digest,)),
    ]
    if is_pg_url(ledger_target):
        attempts += [
            ("UPDATE blob_chunks SET data = 'x' WHERE hash = ?", (digest,)),
            ("DELETE FROM blob_chunks WHERE hash = ?", (digest,)),
            ("TRUNCATE entries CASCADE", ()),
            ("TRUNCATE blob_chunks", ()),
        ]
    with raw_conn(ledger_target) as conn:
        for sql, params in attempts:
            with pytest.raises(REFUSED, match="append-only"):
                conn.execute(sql, params)
    with Ledger.open(ledger_target) as ledger:
        assert [e.id for e in ledger.entries(sid)][-1] == entry_id
        assert ledger.blob(digest) == b"output \xff"
        assert ledger.verify().ok


def test_both_engines_record_the_same_named_migrations(ledger_target: str) -> None:
    Ledger.open(ledger_target).close()
    with raw_conn(ledger_target) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY name")]
    assert names == [m.__name__ for m in MIGRATIONS]


def test_a_ledger_of_a_newer_schema_is_refused_and_left_untouched(ledger_target: str) -> None:
    sid, _, _ = _written(ledger_target)
    with raw_conn(ledger_target) as conn:
        conn.execute("INSERT INTO migrations (name, applied_at) VALUES ('m999_future', 1)")
    with pytest.raises(SchemaTooNewError, match="m999_future"):
        Ledger.open(ledger_target)
    with raw_conn(ledger_target) as conn:
        (count,) = conn.execute("SELECT count(*) FROM entries WHERE session_id = ?", (sid,))
    assert count == (2,)


def test_verify_finds_a_changed_entry_and_salvage_copies_the_rest(
    ledger_target: str, tmp_path: Path
) -> None:
    sid, entry_id, _ = _written(ledger_target)
    with Ledger.open(ledger_target) as ledger:
        kept = ledger.entries(sid)[0]
    # Past the guard, as only someone with the schema owner's rights could.
    with raw_conn(ledger_target) as conn:
        if is_pg_url(ledger_target):
            conn.execute("ALTER TABLE entries DISABLE TRIGGER entries_append_only")
        else:
            conn.execute("DROP TRIGGER entries_no_update")
        conn.execute('UPDATE entries SET payload = \'{"call_id":"c2"}\' WHERE id = ?', (entry_id,))
    with Ledger.open(ledger_target) as ledger:
        report = ledger.verify()
        assert not report.ok
        assert report.damaged == (entry_id,)
        assert report.problems == (
            f"entry {entry_id} (seq {kept.seq + 1}, tool.result): content hash mismatch",
        )
    for engine in ("sqlite", "postgresql"):
        with engine_target(engine, tmp_path, f"copy-{engine}.db") as out, Ledger.open(out) as copy:
            copied = copy.salvage_from(ledger_target)
            assert (copied.sessions, copied.entries, copied.damaged) == (1, 1, (entry_id,))
            assert copy.entries(sid) == [kept]
            assert copy.verify().ok


def test_another_programs_tables_are_refused() -> None:
    with fresh_schema(server_url()) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE invoices (id INTEGER)")
        with pytest.raises(LedgerError, match=r"not a Comal ledger \(invoices\)"):
            Ledger.open(url)


def test_a_writer_role_member_appends_but_can_never_change_an_entry() -> None:
    base = server_url()
    member = "m_" + uuid.uuid4().hex[:12]
    with fresh_schema(base) as url:
        sid, entry_id, _ = _written(url)  # the owner migrates and grants the writer role
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"CREATE ROLE {member} LOGIN IN ROLE {WRITER_ROLE}")
        try:
            member_url = re.sub(r"://[^@/]*@", f"://{member}@", url)
            with Ledger.open(member_url) as ledger:
                lock = ledger.acquire_lock(sid)
                appended = ledger.append(sid, "message.user", {"text": "by a member"})
                ledger.set_status(sid, "finished")
                assert [e.kind for e in ledger.entries(sid)][-2:] == [
                    "lock.acquired",
                    "message.user",
                ]
                assert ledger.lock_holder(sid) == lock
            with psycopg.connect(member_url, autocommit=True) as conn:
                for sql in (
                    f"UPDATE entries SET kind = 'x' WHERE id = '{entry_id}'",
                    f"DELETE FROM entries WHERE id = '{appended.id}'",
                    "DELETE FROM blobs",
                    "DROP TRIGGER entries_append_only ON entries",
                    "ALTER TABLE entries DISABLE TRIGGER entries_append_only",
                ):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        conn.execute(sql)
        finally:
            with psycopg.connect(base, autocommit=True) as admin:
                admin.execute(f"DROP OWNED BY {member}")
                admin.execute(f"DROP ROLE {member}")


def test_the_ledger_url_comes_from_the_environment_before_the_config(tmp_path: Path) -> None:
    (tmp_path / ".comal").mkdir()
    (tmp_path / ".comal" / "config.toml").write_text('[ledger]\nurl = "sqlite:/tmp/x.db"\n')
    env = dict(os.environ)
    assert load_config(env, tmp_path).ledger == "sqlite:/tmp/x.db"
    env["COMAL_LEDGER_URL"] = "postgresql://u@db.example/comal"
    assert load_config(env, tmp_path).ledger == "postgresql://u@db.example/comal"
    env["COMAL_LEDGER_URL"] = "mysql://u@db/comal"
    with pytest.raises(ConfigError, match="must start with postgresql://"):
        load_config(env, tmp_path)
    del env["COMAL_LEDGER_URL"]
    (tmp_path / ".comal" / "config.toml").write_text("")
    assert load_config(env, tmp_path).ledger == load_config(env, tmp_path).ledger_path


def test_comal_verify_and_salvage_through_the_configured_url(
    ledger_target: str, tmp_path: Path
) -> None:
    sid, _, _ = _written(ledger_target)
    env = {**os.environ, "COMAL_LEDGER_URL": ledger_target}
    if not is_pg_url(ledger_target):
        env["COMAL_LEDGER_URL"] = f"sqlite:{ledger_target}"

    def comal(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "comal", *args], env=env, capture_output=True, text=True
        )

    verified = comal("verify", "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["entries"] == 2
    out = tmp_path / "salvaged.db"
    salvaged = comal("verify", "--salvage", str(out), "--json")
    assert salvaged.returncode == 0, salvaged.stderr
    assert json.loads(salvaged.stdout)["entries"] == 2
    with Ledger.open(out) as copy, Ledger.open(ledger_target) as source:
        assert copy.entries(sid) == source.entries(sid)
    bad = comal("verify", "--salvage", str(out))
    assert bad.returncode == 3
    assert bad.stderr.strip().endswith("already exists; salvage writes a new ledger file")
