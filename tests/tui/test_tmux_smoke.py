"""One real-terminal smoke test: `comal hello` in tmux (the task is the first message), the
screen read after its answer, `/help` and `/context`; the TUI ends with its terminal.

tmux is installed by `.ci/run`; the TUI talks to the loopback fake server.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
import uuid
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import configure, ledger_at
from tests.tui.tmux_support import Pane, until

pytestmark = [
    pytest.mark.tui,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by .ci/run"),
]


def _env(home: Path, tmp_path: Path) -> dict[str, str]:
    return {
        "COMAL_HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "xdg"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
    }


def test_ctrl_c_twice_quits_and_prints_the_resume_line(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    socket = f"comal-test-{uuid.uuid4().hex[:8]}"
    with FakeServer(["Hi there, ready."]) as server:
        configure(workspace, server, "openai-chat")
        pane = Pane(socket, workspace, _env(home, tmp_path), [], tmp_path / "status", (120, 45))
        try:
            pane.screen_until(lambda s: "ctx" in s)
            pane.keys("hello", "Enter")
            pane.screen_until(lambda s: "Hi there, ready." in s)
            pane.keys("C-c")
            warned = pane.screen_until(lambda s: "press Ctrl+C" in s)
            assert "ctrl+q" not in warned.lower()
            pane.keys("C-c")
            left = pane.screen_until(lambda s: "Resume this session with" in s)
            until(lambda: bool(pane.ended()), "the TUI's end")
            assert pane.ended() == "0"
        finally:
            pane.close()
    line = next(ln for ln in left.splitlines() if "Resume this session with" in ln)
    session_id = line.rsplit(" ", 1)[-1]
    assert line.strip() == f"Resume this session with: comal --resume {session_id}"
    with ledger_at(home) as ledger:
        assert [info.id for info in ledger.sessions()] == [session_id]


def test_help_and_context_on_a_real_terminal(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    socket = f"comal-test-{uuid.uuid4().hex[:8]}"
    with FakeServer(["Hi there, ready."]) as server:
        configure(workspace, server, "openai-chat")
        env = _env(home, tmp_path)
        pane = Pane(socket, workspace, env, ["hello"], tmp_path / "status", (120, 45))
        pid = 0
        try:
            pane.screen_until(lambda s: "ctx" in s)  # the status bar is up
            pid = pane.pid()
            answered = pane.screen_until(lambda s: "Hi there, ready." in s)
            assert "› hello" in answered
            pane.keys("/help", "Enter")
            shown = pane.screen_until(lambda s: "/quit" in s)
            assert "/context" in shown
            assert "/compact" in shown
            pane.keys("/context", "Enter")
            report = pane.screen_until(lambda s: "Free space" in s)
            assert "System prompt" in report
            assert "Buffer" in report
        finally:
            pane.close()
        # The terminal is gone: the TUI must not outlive it.
        assert _ends(pid, timeout_s=15), f"comal (pid {pid}) still runs after its terminal closed"


def _ends(pid: int, timeout_s: float) -> bool:
    """Whether process `pid` ends within `timeout_s` (it is killed otherwise)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return False
