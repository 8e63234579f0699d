"""Escape sequences in what the model writes never reach a terminal as such: `comal -p` runs on
a real pseudo-terminal and what the terminal receives is read back; piped, the answer stays
byte for byte what the model wrote."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import COMAL, comal_env, configure

pytestmark = pytest.mark.e2e

HOSTILE = "ok\x1b]0;owned title\x07\x1b[2J\x1b[31mred\r\nfine\rhidden\x08\x9b31m done"
SHOWN = "ok\\x1b]0;owned title\\x07\\x1b[2J\\x1b[31mred\nfine\\x0dhidden\\x08\\x9b31m done"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def on_a_terminal(workspace: Path, home: Path, *args: str) -> str:
    """Run comal with stdout and stderr on a pseudo-terminal; what the terminal received."""
    leader, follower = os.openpty()
    proc = subprocess.Popen(
        [*COMAL, *args],
        cwd=workspace,
        env=comal_env(home),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    received = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return received.decode("utf-8").replace("\r\n", "\n")


def test_the_answer_reaches_a_terminal_with_its_controls_made_visible(
    workspace: Path, home: Path
) -> None:
    with FakeServer([HOSTILE]) as server:
        configure(workspace, server, "openai-chat")
        seen = on_a_terminal(workspace, home, "-p", "hello")
    # Comal's own working line may clear its line (ESC [2K); none of the model's sequences pass.
    for raw in ("\x1b]0;owned title", "\x1b[2J", "\x1b[31m", "\x07", "\x9b", "\x08", "\rhidden"):
        assert raw not in seen, repr(raw)
    assert SHOWN + "\n" in seen


def test_a_command_the_model_asks_for_is_shown_safely_on_a_terminal(
    workspace: Path, home: Path
) -> None:
    call = {"command": "echo '\x1b]0;title\x07'"}
    turns: list[str | dict[str, object]] = [
        {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": call}]},
        "done",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        seen = on_a_terminal(workspace, home, "-p", "hello")
    assert "\x1b]0;title" not in seen  # neither in the call's line nor in its output shown live
    assert "\x07" not in seen
    assert "→ Bash echo '\\x1b]0;title\\x07'" in seen


def test_piped_the_answer_is_exact(workspace: Path, home: Path) -> None:
    with FakeServer([HOSTILE]) as server:
        configure(workspace, server, "openai-chat")
        run = subprocess.run(
            [*COMAL, "-p", "hello"],
            cwd=workspace,
            env=comal_env(home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
    assert run.returncode == 0, run.stderr
    assert run.stdout == HOSTILE.encode() + b"\n"
