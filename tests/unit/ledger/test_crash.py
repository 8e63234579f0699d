"""Crash safety, on both engines: a writer SIGKILLed at random moments loses nothing it
reported committed, commits nothing twice and leaves no orphan blob.

The child prints each seq only after `append` returned; whatever it printed before the kill
must be in the ledger afterwards, and the ledger must pass `verify()` (and, for a file,
SQLite's integrity check).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from comal.ledger import Ledger
from comal.ledger.engine import is_pg_url
from tests.pg_support import raw_conn

CHILD = Path(__file__).with_name("ledger_child.py")


def _kill_while_appending(path: str, session_id: str, delay_s: float) -> list[int]:
    """Run one appending child, SIGKILL it after `delay_s`, return the seqs it reported."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), "append", path, session_id], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    try:
        # Wait for the first commit so the kill lands while appends are under way.
        first = proc.stdout.readline()
        assert first.strip().isdigit(), f"child failed before appending: {first!r}"
        time.sleep(delay_s)
        proc.send_signal(signal.SIGKILL)
        rest = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    # A line cut by the kill has no newline yet: only complete lines were reported.
    return [int(line) for line in (first + rest).split(b"\n")[:-1]]


def _crash_and_check(path: str, rounds: int, max_delay_s: float) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    with Ledger.open(path) as ledger:
        sid = ledger.create_session(cwd="/w")
    reported: list[int] = []
    for _ in range(rounds):
        reported += _kill_while_appending(path, sid, rng.uniform(0, max_delay_s))

    if not is_pg_url(path):
        file = sqlite3.connect(path)
        assert file.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        file.close()
    with Ledger.open(path) as ledger:
        report = ledger.verify()
        entries = ledger.entries(sid)
        stored = {entry.seq for entry in entries}
        assert ledger.session(sid).entries == len(stored)
    assert report.ok, (seed, report.problems)
    # Nothing twice: each writer's counter appears once per writer.
    written = [(e.payload["pid"], e.payload["n"]) for e in entries]
    assert len(written) == len(set(written))
    # No orphan: every stored blob is the body of a stored entry.
    with raw_conn(path) as conn:
        blobs = {str(row[0]) for row in conn.execute("SELECT hash FROM blobs")}
    assert blobs == {e.body_hash for e in entries if e.body_hash is not None}
    missing = sorted(set(reported) - stored)
    assert not missing, f"seed {seed}: committed seqs lost: {missing[:20]}"
    assert len(reported) >= rounds
    assert report.entries >= len(reported)


def test_sigkill_during_appends_loses_no_committed_entry(ledger_target: str) -> None:
    # Each round starts a writer process; the slow suite kills 100 to 150 of them.
    _crash_and_check(ledger_target, rounds=8, max_delay_s=0.15)


@pytest.mark.slow
def test_sigkill_during_appends_many_times(ledger_target: str) -> None:
    # A PostgreSQL round costs a connection and its server process: 100 of them (~4 minutes).
    _crash_and_check(
        ledger_target, rounds=100 if is_pg_url(ledger_target) else 150, max_delay_s=0.5
    )
