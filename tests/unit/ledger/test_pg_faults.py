"""Connection faults on PostgreSQL are not data loss: the real test server restarted (cleanly
and as a crash) under a process appending without pause loses no committed entry and commits
none twice; the process says it waits, and goes on when the server is back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from comal.ledger import Ledger
from tests.pg_support import cluster_dir, fresh_schema, restart_cluster, server_url

CHILD = Path(__file__).with_name("ledger_child.py")


def _seqs_until(proc: subprocess.Popen[str], count: int, above: int = 0) -> list[int]:
    """The seqs the appender confirms until `count` of them are above `above` (lines it wrote
    before a restart may still wait in the pipe: those alone do not show it came back)."""
    assert proc.stdout is not None
    seen: list[int] = []
    while sum(seq > above for seq in seen) < count:
        line = proc.stdout.readline()
        assert line, f"the appender died: {proc.wait(timeout=30)}"
        seen.append(int(line))
    return seen


def _last_seq(url: str, session_id: str) -> int:
    with Ledger.open(url) as ledger:
        return max((e.seq for e in ledger.entries(session_id)), default=0)


# Slow: it restarts the shared test server, which no other test may meet mid-restart, and only
# the slow suite runs one test at a time (the default suite runs in two workers).
@pytest.mark.slow
def test_server_restarts_mid_appends_lose_nothing_and_repeat_nothing() -> None:
    cluster = cluster_dir()
    with fresh_schema(server_url()) as url:
        with Ledger.open(url) as ledger:
            sid = ledger.create_session(cwd="/w")
        env = {**os.environ, "COMAL_LEDGER_WAIT_S": "120"}
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), "append", url, sid],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            confirmed = _seqs_until(proc, 30)
            for mode in ("fast", "immediate"):
                restart_cluster(cluster, mode)
                # Every seq above what is stored now was appended after the server came back.
                confirmed += _seqs_until(proc, 30, above=_last_seq(url, sid))
        finally:
            proc.kill()
            _, stderr = proc.communicate(timeout=30)
        with Ledger.open(url) as ledger:
            entries = ledger.entries(sid)
            report = ledger.verify(sid)
    stored = [e.seq for e in entries]
    # Every append that returned is stored (one killed mid-append may be stored or not)…
    assert set(confirmed) <= set(stored)
    # …each once: the appender's counter runs 1, 2, 3… with no gap and no repeat.
    numbers = [e.payload["n"] for e in entries]
    assert numbers == list(range(1, len(numbers) + 1))
    assert report.ok
    waits = [line for line in stderr.splitlines() if "waiting for the ledger" in line]
    backs = [line for line in stderr.splitlines() if line.endswith("is back")]
    assert len(waits) >= 2
    assert len(backs) == len(waits)
    assert "comal@" in waits[0]


def test_a_server_that_does_not_come_back_is_a_clear_error(tmp_path: Path) -> None:
    # A port nothing listens on: the wait ends with LEDGER_UNAVAILABLE, not a traceback.
    env = {
        **os.environ,
        "COMAL_LEDGER_URL": "postgresql://comal@127.0.0.1:9/comal",
        "COMAL_HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "comal", "sessions"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 3
    assert done.stderr.startswith("comal: LEDGER: cannot connect to ledger postgresql://comal@")
    assert "Traceback" not in done.stderr
