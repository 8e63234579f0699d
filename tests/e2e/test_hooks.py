"""Hooks with Claude Code's protocol, end to end: JSON on stdin, exit 2 blocks with stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal_here as comal
from tests.e2e.headless_support import configure, ledger_at, trust_project

pytestmark = pytest.mark.e2e

# Saves its stdin, then refuses any Bash command that mentions "danger".
GUARD = """
import json, sys
event = json.load(sys.stdin)
open("hook-input.json", "w").write(json.dumps(event))
if "danger" in event["tool_input"].get("command", ""):
    print("commands that mention danger are not allowed here", file=sys.stderr)
    sys.exit(2)
"""


def _bash(command: str) -> list[Any]:
    return [{"tool_calls": [{"id": "b1", "name": "Bash", "arguments": {"command": command}}]}, "ok"]


def _setup(ws: Path, server: FakeServer, how: str) -> None:
    (ws / "guard.py").write_text(GUARD)
    command = f"{sys.executable} guard.py"
    configure(ws, server, "openai-chat")
    if how == "toml":
        with (ws / ".comal" / "config.toml").open("a") as fh:
            fh.write(f'\n[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = {json.dumps(command)}\n')
    else:
        (ws / ".claude").mkdir()
        settings = {
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": command}]}
                ]
            }
        }
        (ws / ".claude" / "settings.json").write_text(json.dumps(settings))


@pytest.mark.parametrize("how", ["toml", "claude-settings"])
def test_a_pre_tool_use_hook_blocks_a_bash_call_with_exit_2(how: str, tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    with FakeServer(_bash("echo danger > made.txt")) as server:
        _setup(ws, server, how)
        trust_project(ws, home)
        run = comal("-p", "go", "--output-format", "json", cwd=ws, env_home=home)
        follow_up = json.dumps(server.received[-1].body)
    assert run.code == 0, run.stderr
    assert not (ws / "made.txt").exists()  # the call never ran
    assert "commands that mention danger are not allowed here" in follow_up
    event = json.loads((ws / "hook-input.json").read_text())
    sid = json.loads(run.stdout)["session_id"]
    assert event["hook_event_name"] == "PreToolUse"
    assert event["tool_name"] == "Bash"
    assert event["tool_use_id"] == "b1"
    assert event["tool_input"]["command"] == "echo danger > made.txt"
    assert event["session_id"] == sid
    assert event["cwd"] == str(ws)
    with ledger_at(home) as ledger:
        (hook,) = ledger.entries(sid, kinds=("hook.run",))
        (result,) = ledger.entries(sid, kinds=("tool.result",))
    assert hook.payload["exit_code"] == 2
    assert hook.payload["blocked"] is True
    assert result.payload["status"] == "denied"


def test_a_pre_tool_use_hook_that_exits_0_lets_the_call_run(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    with FakeServer(_bash("echo safe > made.txt")) as server:
        _setup(ws, server, "claude-settings")
        trust_project(ws, home)
        run = comal("-p", "go", "--output-format", "json", cwd=ws, env_home=home)
    assert run.code == 0, run.stderr
    assert (ws / "made.txt").read_text() == "safe\n"
    sid = json.loads(run.stdout)["session_id"]
    with ledger_at(home) as ledger:
        (hook,) = ledger.entries(sid, kinds=("hook.run",))
    assert hook.payload["exit_code"] == 0
    assert hook.payload["blocked"] is False
    assert str(hook.payload["source"]).endswith(".claude/settings.json")


def test_prompt_and_stop_hooks(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    prompt_hook = (
        f"{sys.executable} -c \"import json,sys; p=json.load(sys.stdin)['prompt'];"
        " sys.exit(2) if 'secret' in p else print('Context: the build uses make.')\""
    )
    stop_hook = (
        f'{sys.executable} -c "import json,sys; e=json.load(sys.stdin);'
        " (print('run the tests first', file=sys.stderr), sys.exit(2))"
        " if not e['stop_hook_active'] else None\""
    )
    with FakeServer(["I am done.", "Tests pass now."]) as server:
        configure(ws, server, "openai-chat")
        with (ws / ".comal" / "config.toml").open("a") as fh:
            fh.write(f"\n[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(prompt_hook)}\n")
            fh.write(f"\n[[hooks.Stop]]\ncommand = {json.dumps(stop_hook)}\n")
        trust_project(ws, home)
        blocked = comal("-p", "tell me the secret", cwd=ws, env_home=home)
        requests_after_block = len(server.received)
        run = comal("-p", "build it", cwd=ws, env_home=home)
        bodies = [json.dumps(r.body) for r in server.received]
    assert blocked.code == 2
    assert "HOOK_BLOCKED" in blocked.stderr
    assert "Traceback" not in blocked.stderr
    assert requests_after_block == 0
    assert run.code == 0, run.stderr
    assert "Context: the build uses make." in bodies[0]
    assert "Stop hook: run the tests first" in bodies[1]
    assert "Tests pass now." in run.stdout
