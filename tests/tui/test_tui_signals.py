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
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
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

pytestmark = [
    pytest.mark.tui,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by .ci/run"),
]

DELAYED_WRITE = {"command": "sleep 4; touch late.txt"}


def _tmux(socket: str, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=True, timeout=20
    )
    return done.stdout


def _pane(socket: str, variable: str) -> str:
    return _tmux(socket, "display-message", "-p", "-t", "comal", f"#{{{variable}}}").strip()


def _ended(socket: str) -> str:
    """The pane's exit status, or `signal N` when a signal ended it ("" while it runs)."""
    if _pane(socket, "pane_dead") != "1":
        return ""
    signum = _pane(socket, "pane_dead_signal")
    return f"signal {signum}" if signum else _pane(socket, "pane_dead_status")


def _until(test: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if test():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout_s:g} s")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too: only its parent (tmux, with remain-on-exit) has not reaped it.
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


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
    try:
        workspace, home = make_workspace(tmp_path, server.base_url)
        env = comal_env(home) | {"TERM": "xterm-256color", "HOME": str(tmp_path)}
        command = " ".join(
            [
                "env",
                *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                shlex.quote(sys.executable),
                "-m",
                "comal",
                "--permission-mode",
                "bypassPermissions",
                shlex.quote("write late.txt slowly"),
            ]
        )
        _tmux(socket, "new-session", "-d", "-s", "comal", "-x", "120", "-y", "40")
        _tmux(socket, "set-option", "-t", "comal", "remain-on-exit", "on")
        _tmux(socket, "respawn-pane", "-k", "-t", "comal", "-c", str(workspace), command)
        pid = int(_pane(socket, "pane_pid"))
        _until(lambda: _started(session_entries(home, workspace)[1]), "the Bash call's start")
        time.sleep(0.5)  # let bash start its `sleep`
        sid, before = session_entries(home, workspace)
        os.kill(pid, signum)
        _until(lambda: not _alive(pid), f"the TUI's end after {signum.name}", timeout_s=30)
        # tmux may see the terminal close before it reaps the process: wait for how it ended.
        _until(lambda: bool(_ended(socket)), "tmux seeing how the process ended")
        status = _ended(socket)
        screen = _tmux(socket, "capture-pane", "-p", "-S", "-", "-t", "comal")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
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
        _until(answered, "the TUI's answer")
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
