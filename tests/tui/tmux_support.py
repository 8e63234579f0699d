"""Running the TUI on a real terminal: a detached tmux server of its own per test.

tmux 3.3a closes a pane when the pane's process is reaped, and may do so before it has read
what the process wrote last: under load the resume line a TUI prints as it ends was lost, and
the SIGCHLD of a pane's process was seen missed, leaving a zombie and no status. A user's TUI
runs under a shell that outlives it, so the tests do the same: a small Python parent (the
pane's process) runs the TUI, waits for it, writes its exit status to a file, and keeps the
terminal open while the test reads the screen.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

_PARENT = """
import subprocess, sys, time
from pathlib import Path
status = Path(sys.argv[1])
child = subprocess.Popen(sys.argv[2:])
Path(f"{status}.pid").write_text(str(child.pid))
code = child.wait()
status.write_text(f"signal {-code}" if code < 0 else str(code))
time.sleep(600)  # the terminal stays open until the test has read it (or kills tmux)
"""


def tmux(socket: str, *args: str) -> str:
    """Run a tmux command on the test's own server (`-L socket`)."""
    done = subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=True, timeout=20
    )
    return done.stdout


def screen(socket: str) -> str:
    """The pane's visible screen and its history."""
    return tmux(socket, "capture-pane", "-p", "-S", "-", "-t", "comal")


def until(
    test: Callable[[], bool],
    what: str,
    timeout_s: float = 60,
    describe: Callable[[], str] = lambda: "",
) -> None:
    """Wait for `test`; a liveness bound, not a timing."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if test():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout_s:g} s{describe()}")


class Pane:
    """`python -m comal ARGS` in the pane of a new detached tmux session `comal`."""

    def __init__(
        self,
        socket: str,
        workspace: Path,
        env: Mapping[str, str],
        args: Sequence[str],
        status: Path,
        size: tuple[int, int] = (120, 40),
    ) -> None:
        self.socket = socket
        self.status = status
        argv = [sys.executable, "-c", _PARENT, str(status), sys.executable, "-m", "comal"]
        command = " ".join(
            [
                "env",
                *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                *(shlex.quote(a) for a in [*argv, *args]),
            ]
        )
        width, height = size
        tmux(socket, "new-session", "-d", "-s", "comal", "-x", str(width), "-y", str(height))
        tmux(socket, "respawn-pane", "-k", "-t", "comal", "-c", str(workspace), command)

    def pid(self) -> int:
        """The TUI's process id (it is written once the TUI is started)."""
        path = Path(f"{self.status}.pid")
        until(lambda: path.exists() and bool(path.read_text()), "the TUI's start")
        return int(path.read_text())

    def ended(self) -> str:
        """The TUI's exit status, `signal N` if a signal killed it, "" while it runs."""
        return self.status.read_text() if self.status.exists() else ""

    def screen(self) -> str:
        return screen(self.socket)

    def screen_until(self, test: Callable[[str], bool], timeout_s: float = 30) -> str:
        """The screen once `test` holds on it."""
        shown = [""]

        def holds() -> bool:
            shown[0] = self.screen()
            return test(shown[0])

        until(holds, "the screen showing what was expected", timeout_s, lambda: f":\n{shown[0]}")
        return shown[0]

    def keys(self, *keys: str) -> None:
        tmux(self.socket, "send-keys", "-t", "comal", *keys)

    def close(self) -> None:
        """End the tmux server: the terminal closes."""
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended: only its parent has not read its status)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
