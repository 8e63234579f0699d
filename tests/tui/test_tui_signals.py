"""SIGTERM and SIGHUP of a running TUI on a real terminal (tmux): the TUI ends, the command it
was running dies with it (its delayed write never happens), the call is recorded `uncertain`,
what was recorded before stays as it was, and the session resumes.

A terminal that goes away sends SIGHUP; a service manager or `kill` sends SIGTERM. Either must
end the TUI the way Ctrl+C does, never leave it drawing on a dead terminal. The bounds below
are liveness checks (a TUI that ignores the signal runs until killed), not timings.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from perf.crash_harness import (
    FakeServerProcess,
    comal_env,
    make_workspace,
    session_entries,
    start_comal,
)

from comal.ledger import Entry, Ledger
from tests.tui.tmux_support import Pane, alive, until

pytestmark = [
    pytest.mark.tui,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by .ci/run"),
]

DELAYED_WRITE = {"command": "sleep 4; touch late.txt"}


def _started(entries: list[Entry]) -> bool:
    return any(e.kind == "tool.started" for e in entries)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_the_tui_and_its_running_command(
    tmp_path: Path, signum: signal.Signals, request: pytest.FixtureRequest
) -> None:
    turns: list[object] = [
        {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": DELAYED_WRITE}]},
        "The command was stopped; I will not repeat it.",
    ]
    server = FakeServerProcess(tmp_path / "server", turns)
    request.addfinalizer(server.stop)  # also when the TUI's end is never seen
    socket = f"comal-test-{uuid.uuid4().hex[:8]}"
    workspace, home = make_workspace(tmp_path, server.base_url)
    env = comal_env(home) | {"TERM": "xterm-256color", "HOME": str(tmp_path)}
    args = ["--permission-mode", "bypassPermissions", "write late.txt slowly"]
    pane = Pane(socket, workspace, env, args, tmp_path / "status")
    try:
        pid = pane.pid()
        until(lambda: _started(session_entries(home, workspace)[1]), "the Bash call's start")
        time.sleep(0.5)  # let bash start its `sleep`
        sid, before = session_entries(home, workspace)
        os.kill(pid, signum)
        until(lambda: not alive(pid), f"the TUI's end after {signum.name}", timeout_s=30)
        until(lambda: bool(pane.ended()), "the TUI's exit status")
        status = pane.ended()
        screen = pane.screen_until(lambda s: f"stopped by {signum.name}" in s)
    finally:
        pane.close()
    try:
        assert sid is not None
        assert status == str(128 + signum), screen
        assert f"Resume this session with: comal --resume {sid}" in screen
        assert f"comal: stopped by {signum.name}" in screen
        time.sleep(5)  # past the moment an orphaned command would have written
        assert not (workspace / "late.txt").exists()
        _, after = session_entries(home, workspace)
        assert after[: len(before)] == before
        results = [e.payload for e in after if e.kind == "tool.result"]
        assert [(r["call_id"], r["status"]) for r in results] == [("c1", "uncertain")]
        with Ledger.open(home / "ledger.db") as ledger:
            assert ledger.verify().ok
            assert not ledger.lock_holder(sid)
        resumed = start_comal(workspace, home, "--resume", sid, "-p")
        out, err = resumed.communicate(timeout=60)
        assert resumed.returncode == 0, err.decode()
        assert b"will not repeat it" in out
    finally:
        server.stop()


def test_a_tui_without_a_controlling_terminal_ends_when_its_terminal_goes(
    tmp_path: Path,
) -> None:
    """Started under `setsid` (no controlling terminal, as by a harness), the TUI gets no
    SIGHUP from the kernel when its terminal closes: it must see the hang-up itself, not
    spin on end-of-file reads with nobody to draw for."""
    server = FakeServerProcess(tmp_path / "server", ["Done."])
    master, slave = os.openpty()
    hang_up, closed = threading.Event(), threading.Event()

    def terminal() -> None:
        """Read what the app draws (or its writes would block), then close: a descriptor
        another thread is blocked reading stays open, so the reader closes it itself."""
        while not hang_up.is_set():
            if select.select([master], [], [], 0.1)[0]:
                with contextlib.suppress(OSError):
                    os.read(master, 65536)
        os.close(master)
        closed.set()

    try:
        workspace, home = make_workspace(tmp_path, server.base_url)
        env = comal_env(home) | {"TERM": "xterm-256color", "HOME": str(tmp_path)}
        tui = subprocess.Popen(
            [sys.executable, "-m", "comal", "say done"],
            cwd=workspace,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        threading.Thread(target=terminal, daemon=True).start()
        answered = lambda: any(  # noqa: E731
            e.kind == "message.assistant" for e in session_entries(home, workspace)[1]
        )
        until(answered, "the TUI's answer")
        sid, before = session_entries(home, workspace)
        hang_up.set()  # the terminal goes away; no SIGHUP reaches a process without it
        assert closed.wait(timeout=10)
        try:
            code = tui.wait(timeout=30)  # liveness: a spinning TUI never ends
        except subprocess.TimeoutExpired:
            tui.kill()
            tui.wait()
            raise AssertionError("the TUI outlived its terminal") from None
    finally:
        server.stop()
    assert code == 128 + signal.SIGHUP
    _, after = session_entries(home, workspace)
    assert after[: len(before)] == before
    with Ledger.open(home / "ledger.db") as ledger:
        assert ledger.verify().ok
        assert sid is not None
        assert not ledger.lock_holder(sid)
