"""Inputs no command line or ledger entry can hold: a NUL byte in a Bash command the model
sends, and stdin (or a task argument) that is not UTF-8. Each is refused with a clear message,
through the real CLI; none ends the session with UNEXPECTED."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import COMAL, comal, comal_env, configure, ledger_at

pytestmark = pytest.mark.e2e


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_a_nul_byte_in_a_bash_command_is_refused_and_the_session_goes_on(
    workspace: Path, home: Path
) -> None:
    nul = {"command": "touch made\x00; echo ran"}
    turns: list[str | dict[str, object]] = [
        {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": nul}]},
        "could not run it",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "run it", "--output-format", "stream-json", cwd=workspace, env_home=home)
    assert "UNEXPECTED" not in run.stderr, run.stderr
    assert run.code == 0, run.stderr
    assert not (workspace / "made").exists()
    with ledger_at(home) as ledger:
        results = [e for e in ledger.entries(run.session_id()) if e.kind == "tool.result"]
        output = ledger.body(results[0])
    assert [(r.payload["call_id"], r.payload["status"]) for r in results] == [("c1", "error")]
    assert output == b"not run: the command holds a NUL byte (\\0), which no command line can"


@pytest.mark.parametrize(
    ("stdin", "told"),
    [
        (b"hello \xff\xfe world", "piped stdin is not UTF-8 text (byte 6: b'\\xff\\xfe w')"),
        (b"caf\xc3", "piped stdin is not UTF-8 text (byte 3: b'\\xc3')"),
        (b"a\x00b", "piped stdin holds a NUL byte"),
    ],
)
def test_stdin_that_is_not_text_is_a_usage_error_and_records_nothing(
    workspace: Path, home: Path, stdin: bytes, told: str
) -> None:
    with FakeServer(["never asked"]) as server:
        configure(workspace, server, "openai-chat")
        proc = subprocess.run(
            [*COMAL, "-p", "summarise"],
            cwd=workspace,
            env=comal_env(home),
            input=stdin,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert server.stats().requests == 0
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err == f"comal: CONFIG: {told}; pass text, or a file's path for the agent to read\n"
    if (home / "ledger.db").exists():
        with ledger_at(home) as ledger:
            assert ledger.sessions() == []


def test_a_task_argument_that_is_not_utf8_is_a_usage_error(workspace: Path, home: Path) -> None:
    with FakeServer(["never asked"]) as server:
        configure(workspace, server, "openai-chat")
        proc = subprocess.run(
            [*[a.encode() for a in COMAL], b"-p", b"fix caf\xe9"],
            cwd=workspace,
            env=comal_env(home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 2, proc.stderr
    assert b"the task argument is not UTF-8 text (byte 7: b'\\xe9')" in proc.stderr
