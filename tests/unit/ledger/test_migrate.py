"""`comal ledger migrate --to …`: a ledger copied to the other engine and back keeps every seq,
id, payload, hash and blob; a copy killed midway shows only whole sessions and resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from comal.errors import LedgerError
from comal.ledger import Entry, Ledger, SessionInfo
from comal.ledger.engine import is_pg_url
from comal.ledger.pages import INDEX_MIN_BYTES
from comal.testing.sessions import SessionBuilder
from tests.pg_support import ledger_target as engine_target


def _other(target: str) -> str:
    return "sqlite" if is_pg_url(target) else "postgresql"


def _as_url(target: str) -> str:
    return target if is_pg_url(target) else f"sqlite:{target}"


def _migrate(source: str, to: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COMAL_LEDGER_URL": _as_url(source)}
    return subprocess.run(
        [sys.executable, "-m", "comal", "ledger", "migrate", "--to", _as_url(to), "--json"],
        env=env,
        capture_output=True,
        text=True,
    )


Built = dict[str, tuple[SessionInfo, list[Entry], list[Entry]]]


def _build(target: str) -> tuple[Built, str]:
    """A ledger with what a copy must keep: outputs, a paged output, a child, a fork, a
    rewind naming seqs, a blob no entry names, statuses."""
    with Ledger.open(target) as ledger:
        main = SessionBuilder(ledger)
        main.user("look")
        main.turn("", [("Bash", {"command": "ls"}, b"a\nb\n\xff", 0)])
        big = ("line ✓ 😀\n" * (INDEX_MIN_BYTES // 12 + 10)).encode()
        main.turn("", [("Bash", {"command": "cat big"}, big, 0)])
        child = SessionBuilder(ledger, parent_id=main.session_id)
        child.user("sub task")
        first = ledger.entries(main.session_id)[1]
        fork = ledger.fork_session(main.session_id, through_seq=first.seq)
        ledger.append(fork, "message.user", {"text": "in the fork"})
        main.append("session.rewound", {"conversation": True, "to_seq": first.seq})
        kept = ledger.put_blob(b"a file's bytes a rewind kept")
        ledger.set_status(child.session_id, "finished")
        built = {
            sid: (ledger.session(sid), ledger.entries(sid), ledger.entries(sid, own=True))
            for sid in (main.session_id, child.session_id, fork)
        }
        return built, kept


def test_a_ledger_migrated_to_the_other_engine_and_back_is_the_same(
    ledger_target: str, tmp_path: Path
) -> None:
    before, kept = _build(ledger_target)
    main = next(iter(before))
    with (
        engine_target(_other(ledger_target), tmp_path, "there.db") as there,
        engine_target("sqlite", tmp_path / "back", "back.db") as back,
    ):
        done = _migrate(ledger_target, there)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert (report["sessions_copied"], report["sessions_skipped"]) == (3, 0)
        assert report["same"] is True
        assert report["hashes"][0] == report["hashes"][1]
        with Ledger.open(there) as copy, Ledger.open(back) as home:
            copy.migrate_to(home)
            for ledger in (copy, home):
                assert ledger.blob(kept) == b"a file's bytes a rewind kept"
                for sid, (info, history, own) in before.items():
                    assert (ledger.session(sid), ledger.entries(sid)) == (info, history)
                    assert ledger.entries(sid, own=True) == own
                assert ledger.verify().ok
            with Ledger.open(ledger_target) as source:
                assert source.fingerprint() == copy.fingerprint() == home.fingerprint()
                big = [e for e in source.entries(main, own=True) if e.body_hash][-1]
                digest = big.body_hash
                assert digest is not None
                assert home.page_index(digest) == source.page_index(digest)
            # New appends continue above every copied seq.
            last = home.entries(main)[-1].seq
            assert copy.append(main, "message.user", {"text": "later"}).seq > last


@pytest.mark.slow  # 4,800 entries copied twice, on both engines: minutes on a loaded machine
def test_a_killed_migration_shows_only_whole_sessions_and_resumes(
    ledger_target: str, tmp_path: Path
) -> None:
    with Ledger.open(ledger_target, durable=False) as ledger:
        # Enough sessions that the copy is still running when the first whole one shows, on
        # a loaded machine too.
        for n in range(400):
            sid = ledger.create_session(cwd=f"/w{n}")
            for i in range(12):
                ledger.append(sid, "message.user", {"text": f"{n}.{i}"}, body=b"x" * (i + n))
        total = {s.id: s.entries for s in ledger.sessions()}
    with engine_target(_other(ledger_target), tmp_path, "there.db") as there:
        env = {**os.environ, "COMAL_LEDGER_URL": _as_url(ledger_target)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "comal", "ledger", "migrate", "--to", _as_url(there)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        seen = 0
        deadline = time.monotonic() + 120
        while seen < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
            try:
                with Ledger.open(there) as peek:
                    seen = len(peek.sessions())
            except LedgerError:
                seen = 0  # the target is still being created
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        with Ledger.open(there) as copy:
            partial = {s.id: s.entries for s in copy.sessions()}
        assert 0 < len(partial) < len(total)
        assert all(total[sid] == count for sid, count in partial.items())  # never half a one
        done = _migrate(ledger_target, there)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["sessions_skipped"] == len(partial)
        assert report["sessions_copied"] == len(total) - len(partial)
        assert report["same"] is True


def test_a_target_holding_other_sessions_is_refused(ledger_target: str, tmp_path: Path) -> None:
    _build(ledger_target)
    with engine_target(_other(ledger_target), tmp_path, "there.db") as there:
        with Ledger.open(there) as other:
            stranger = other.create_session(cwd="/elsewhere")
        done = _migrate(ledger_target, there)
        assert done.returncode == 3
        assert f"the target already holds session {stranger}" in done.stderr
        with Ledger.open(there) as other:
            assert [s.id for s in other.sessions()] == [stranger]


@pytest.mark.parametrize("to", ["mysql://x/y", "ledger.db"])
def test_a_target_that_is_no_ledger_url_is_refused(to: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "comal", "ledger", "migrate", "--to", to],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3
    assert "--to must be a postgresql:// URL or sqlite:PATH" in done.stderr
