"""One real-terminal smoke test: `comal hello` in tmux (the task is the first message), the
screen read after its answer, `/help` and `/context`; the TUI ends with its terminal.

tmux is installed by `.ci/run`; the TUI talks to the loopback fake server.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import configure, ledger_at

pytestmark = [
    pytest.mark.tui,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by .ci/run"),
]


def _tmux(socket: str, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=True, timeout=20
    )
    return done.stdout


def _screen_until(socket: str, test: Callable[[str], bool], timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux(socket, "capture-pane", "-p", "-t", "comal")
        if test(screen):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"the screen never showed what was expected:\n{screen}")


def _start(socket: str, workspace: Path, home: Path, tmp_path: Path) -> None:
    """`comal` in a detached tmux session `comal`, its pane kept after the process exits."""
    env = {
        "COMAL_HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "xdg"),
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
    }
    command = " ".join(
        [
            "env",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m",
            "comal",
        ]
    )
    _tmux(socket, "new-session", "-d", "-s", "comal", "-x", "120", "-y", "45", "-c", str(workspace))
    _tmux(socket, "set-option", "-t", "comal", "remain-on-exit", "on")
    _tmux(socket, "respawn-pane", "-k", "-t", "comal", command)


def test_ctrl_c_twice_quits_and_prints_the_resume_line(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    socket = f"comal-test-{uuid.uuid4().hex[:8]}"
    with FakeServer(["Hi there, ready."]) as server:
        configure(workspace, server, "openai-chat")
        _start(socket, workspace, home, tmp_path)
        try:
            _screen_until(socket, lambda s: "ctx" in s)
            _tmux(socket, "send-keys", "-t", "comal", "hello", "Enter")
            _screen_until(socket, lambda s: "Hi there, ready." in s)
            _tmux(socket, "send-keys", "-t", "comal", "C-c")
            warned = _screen_until(socket, lambda s: "press Ctrl+C" in s)
            assert "ctrl+q" not in warned.lower()
            _tmux(socket, "send-keys", "-t", "comal", "C-c")
            left = _screen_until(socket, lambda s: "Resume this session with" in s)
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
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
        env = {
            "COMAL_HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "xdg"),
            "TERM": "xterm-256color",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
        }
        command = " ".join(
            [
                "env",
                *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                shlex.quote(sys.executable),
                "-m",
                "comal",
                "hello",
            ]
        )
        _tmux(
            socket,
            "new-session",
            "-d",
            "-s",
            "comal",
            "-x",
            "120",
            "-y",
            "45",
            "-c",
            str(workspace),
            command,
        )
        pid = 0
        try:
            _screen_until(socket, lambda s: "ctx" in s)  # the status bar is up
            pid = int(_tmux(socket, "display-message", "-p", "-t", "comal", "#{pane_pid}"))
            answered = _screen_until(socket, lambda s: "Hi there, ready." in s)
            assert "› hello" in answered
            _tmux(socket, "send-keys", "-t", "comal", "/help", "Enter")
            shown = _screen_until(socket, lambda s: "/quit" in s)
            assert "/context" in shown
            assert "/compact" in shown
            _tmux(socket, "send-keys", "-t", "comal", "/context", "Enter")
            report = _screen_until(socket, lambda s: "Free space" in s)
            assert "System prompt" in report
            assert "Buffer" in report
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
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
