"""The PostgreSQL server crashes and restarts in the middle of a real `comal -p` turn (while a
tool runs): the turn says it waits for the ledger, goes on when the server is back and ends
normally; every entry committed before the crash is still there, unchanged, and the call's
result is recorded once."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from comal.ledger import Entry, Ledger
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import COMAL, comal_env, configure
from tests.pg_support import cluster_dir, fresh_schema, restart_cluster, server_url

# Slow: it crashes the shared test server, which no other test may meet mid-restart, and only
# the slow suite runs one test at a time (the default suite runs in two workers).
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _entries(url: str, workspace: Path) -> list[Entry]:
    with Ledger.open(url) as ledger:
        sid = ledger.latest_session(str(workspace))
        return [] if sid is None else ledger.entries(sid)


def test_a_server_crash_mid_turn_loses_nothing_committed(tmp_path: Path) -> None:
    cluster = cluster_dir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    turns: list[str | dict[str, Any]] = [
        {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": {"command": "sleep 3"}}]},
        "done after the restart",
    ]
    with fresh_schema(server_url()) as url, FakeServer(list(turns)) as server:
        configure(workspace, server, "openai-chat")
        env = comal_env(tmp_path / "home") | {
            "COMAL_LEDGER_URL": url,
            "COMAL_LEDGER_WAIT_S": "120",
        }
        proc = subprocess.Popen(
            [*COMAL, "-p", "work"],
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            before: list[Entry] = []
            while not any(e.kind == "tool.started" for e in before):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the call never started"
                time.sleep(0.05)
                before = _entries(url, workspace)
            restart_cluster(cluster, "immediate")  # while `sleep 3` runs
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        after = _entries(url, workspace)
        with Ledger.open(url) as ledger:
            report = ledger.verify()
    assert proc.returncode == 0, err
    assert "done after the restart" in out
    stored = {e.id: e.content_hash for e in after}
    assert all(stored.get(e.id) == e.content_hash for e in before)
    assert [e.payload["call_id"] for e in after if e.kind == "tool.result"] == ["c1"]
    assert report.ok
    assert "waiting for the ledger" in err
    assert "is back" in err
