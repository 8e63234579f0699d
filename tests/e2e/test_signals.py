"""SIGTERM and SIGHUP of `comal -p`: the running command's process group dies with Comal (its
delayed write never happens), the call is recorded uncertain, the exit code is 128 + signal,
and `--resume` continues the session."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from perf.crash_harness import (
    FakeServerProcess,
    make_workspace,
    session_entries,
    start_comal,
    wait_for_entries,
)

from comal.ledger import Entry

pytestmark = pytest.mark.e2e

DELAYED_WRITE = {"command": "sleep 3; touch late.txt"}


def _started(entries: list[Entry]) -> bool:
    return any(e.kind == "tool.started" for e in entries)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_kills_the_running_command_and_the_session_resumes(
    tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    turns: list[object] = [
        {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": DELAYED_WRITE}]},
        "The command was stopped; I will not repeat it.",
    ]
    server = FakeServerProcess(tmp_path / "server", turns)
    try:
        workspace, home = make_workspace(tmp_path, server.base_url, ())
        proc = start_comal(workspace, home, "-p", "write late.txt slowly")
        wait_for_entries(proc, home, workspace, _started, timeout_s=30)
        time.sleep(0.3)  # let bash start its `sleep`
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err.decode()
        assert signal.Signals(signum).name in err.decode()
        time.sleep(4)  # past the moment the orphan would have written
        assert not (workspace / "late.txt").exists()

        sid, entries = session_entries(home, workspace)
        assert sid is not None
        results = [e.payload for e in entries if e.kind == "tool.result"]
        assert [(r["call_id"], r["status"]) for r in results] == [("c1", "uncertain")]

        resumed = start_comal(workspace, home, "--resume", sid, "-p")
        out, err = resumed.communicate(timeout=60)
        assert resumed.returncode == 0, err.decode()
        assert b"will not repeat it" in out
        _, after = session_entries(home, workspace)
        assert after[: len(entries)] == entries
        assert not (workspace / "late.txt").exists()
    finally:
        server.stop()
