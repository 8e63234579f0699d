"""The edges of the command line: standard output on a full disk is not a full ledger, JSON
modes answer a usage error or a signal with a JSON object."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import COMAL, comal, comal_env, configure, ledger_at

pytestmark = pytest.mark.e2e


def _to_dev_full(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    with Path("/dev/full").open("w") as full:
        return subprocess.run(
            [*COMAL, *args],
            cwd=cwd,
            env=comal_env(home),
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )


def test_output_to_a_full_disk_is_not_a_full_ledger(workspace: Path, home: Path) -> None:
    with FakeServer(["The answer."]) as server:
        configure(workspace, server, "openai-chat")
        run = _to_dev_full("-p", "answer me", cwd=workspace, home=home)
    assert run.returncode == 1, run.stderr
    assert run.stderr.splitlines()[-1] == (
        "comal: OUTPUT: cannot write to standard output (No space left on device); nothing"
        " recorded is affected"
    )
    assert "DISK_FULL" not in run.stderr
    with ledger_at(home) as ledger:
        (session,) = ledger.sessions()
        answers = ledger.entries(session.id, kinds=("message.assistant",))
    assert len(answers) == 1
    for args in (["sessions", "--json"], ["show", session.id], ["sessions"]):
        listed = _to_dev_full(*args, cwd=workspace, home=home)
        assert listed.returncode == 1, listed.stderr
        assert listed.stderr.startswith("comal: OUTPUT: cannot write to standard output"), args
        assert "Traceback" not in listed.stderr


def test_json_modes_answer_a_usage_error_with_json(workspace: Path, home: Path) -> None:
    run = comal(
        "-p", "x", "--output-format", "json", "--max-turns", "0", cwd=workspace, env_home=home
    )
    assert run.code == 2
    body = json.loads(run.stdout)
    assert body["error"]["code"] == "USAGE"
    assert "--max-turns" in body["error"]["message"]


def test_json_modes_answer_a_signal_with_json(workspace: Path, home: Path) -> None:
    call = {"id": "s1", "name": "Bash", "arguments": {"command": "sleep 30"}}
    with FakeServer([{"tool_calls": [call]}, "never"]) as server:
        configure(workspace, server, "openai-chat")
        proc = subprocess.Popen(
            [*COMAL, "-p", "wait", "--output-format", "json"],
            cwd=workspace,
            env=comal_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _started(home):
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    body = json.loads(out.splitlines()[-1])
    assert body["error"]["code"] == "INTERRUPTED"
    assert body["error"]["message"] == "stopped by SIGTERM"


def _started(home: Path) -> bool:
    if not (home / "ledger.db").exists():
        return False
    with ledger_at(home) as ledger:
        return any(ledger.entries(s.id, kinds=("tool.started",)) for s in ledger.sessions())
