"""`comal -p` with stderr on a terminal (a real pty): the working line is drawn in place while a
command runs — its command, elapsed time, tokens, how to interrupt, its last output line — and
cleared before the answer; with stderr not a terminal, none of it is written."""

from __future__ import annotations

import os
import pty
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import COMAL, comal, comal_env, configure

pytestmark = pytest.mark.e2e

COMMAND = "echo step-one; sleep 1.5; echo step-two"
TURNS: list[Any] = [
    {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": {"command": COMMAND}}]},
    "All steps ran.",
]
LINE = re.compile(
    r"\r\x1b\[2K[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Bash " + re.escape(COMMAND[:26]) + r"… · \d+s · ↑ [\d,.k]+ ↓ [\d,.k]+"
    r" tokens · ctrl\+c to interrupt · │ step-one"
)


def test_a_terminal_sees_the_working_line_with_the_running_commands_output(
    workspace: Path, home: Path
) -> None:
    with FakeServer(TURNS) as server:
        configure(workspace, server, "openai-chat")
        controller, terminal = pty.openpty()
        proc = subprocess.Popen(
            [*COMAL, "-p", "run the steps"],
            cwd=workspace,
            env=comal_env(home) | {"COLUMNS": "200"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's last writer is gone
                break
            if not chunk:
                break
            shown += chunk
        out, _ = proc.communicate(timeout=60)
        os.close(controller)
    text = shown.decode("utf-8", errors="replace")
    assert proc.returncode == 0, text
    assert out.decode() == "All steps ran.\n"
    assert LINE.search(text), text
    # Cleared before the closing line: the last thing drawn is never left under it.
    closing = text.rindex("session ")
    assert text[:closing].endswith("\r\x1b[2K"), text[-400:]


def test_off_a_terminal_nothing_of_the_working_line_is_written(workspace: Path, home: Path) -> None:
    with FakeServer(TURNS) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "run the steps", cwd=workspace, env_home=home)
    assert run.code == 0, run.stderr
    assert "\x1b[2K" not in run.stderr
    assert "\r" not in run.stderr
    assert "ctrl+c to interrupt" not in run.stderr
