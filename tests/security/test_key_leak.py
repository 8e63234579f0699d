"""Keys in reach: a model that runs `env`, reads `/proc/self/environ` or its parent's, or has a
hook or an MCP server print their environment, must find no provider key; and a key's value
that reaches an output anyway (a file holding it) is redacted before the ledger."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.headless_support import trust_project
from tests.sandbox_support import NEEDS_BUBBLEWRAP
from tests.security.support import attack, calls

pytestmark = NEEDS_BUBBLEWRAP

KEYS = {
    "OPENAI_API_KEY": "sk-openai-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-0123456789abcdef",
    "FAKE_PROVIDER_KEY": "fpk-0123456789abcdef",  # the configured provider's api_key_env
    "GITHUB_TOKEN": "ghp_0123456789abcdef",
    "KEPT_TOKEN": "kept-0123456789abcdef",  # listed in env_passthrough
}
LEAKS = (
    "env; tr '\\0' '\\n' < /proc/self/environ; tr '\\0' '\\n' < /proc/$PPID/environ; "
    "tr '\\0' '\\n' < /proc/1/environ; echo \"k=$FAKE_PROVIDER_KEY\""
)
DUMP = (
    "import os, sys; open(sys.argv[1], 'w').write("
    "'\\n'.join(f'{k}={v}' for k, v in sorted(os.environ.items())))"
)


def secrets_in(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return sorted(name for name, value in KEYS.items() if value.encode() in data)


@pytest.mark.parametrize("mode", ["workspace-write", "full-access"])
def test_no_key_reaches_bash_a_hook_or_an_mcp_server(
    tmp_path: Path, outside: Path, mode: str
) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    hook = f"{sys.executable} -c {json.dumps(DUMP)} {outside}/hook-env"
    config = (
        '\napi_key_env = "FAKE_PROVIDER_KEY"\n'  # appended to [providers.fake]
        '\n[sandbox]\nenv_passthrough = ["KEPT_TOKEN"]\n'
        f"\n[[hooks.PreToolUse]]\ncommand = {json.dumps(hook)}\n"
        f"\n[mcp_servers.dump]\ncommand = {json.dumps(sys.executable)}\n"
        f'args = ["-c", {json.dumps(DUMP)}, "{outside}/mcp-env"]\n'
    )
    run = attack(
        workspace,
        home,
        calls(("Bash", {"command": LEAKS})),
        "--permission-mode",
        mode,
        config=config,
        extra_env=KEYS,
        before_run=lambda: trust_project(workspace, home),
    )
    assert run.run.code == 0, run.run.stderr
    (bash,) = run.results
    assert bash["exit_code"] == 0
    assert "k=\n" in bash["output"]
    assert secrets_in(bash["output"]) == ["KEPT_TOKEN"]
    assert secrets_in((outside / "hook-env").read_text()) == ["KEPT_TOKEN"]
    assert secrets_in((outside / "mcp-env").read_text()) == []
    assert secrets_in(run.recorded) == ["KEPT_TOKEN"]


def test_a_key_printed_anyway_is_redacted_before_the_ledger(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(f"the key is {KEYS['OPENAI_API_KEY']}\n")
    run = attack(
        workspace,
        home,
        calls(("Bash", {"command": "cat notes.txt"}), ("Read", {"path": "notes.txt"})),
        extra_env=KEYS,
    )
    assert run.run.code == 0, run.run.stderr
    bash, read = run.results
    assert bash["output"] == "the key is [redacted: OPENAI_API_KEY]\n"
    assert read["output"] == "     1\tthe key is [redacted: OPENAI_API_KEY]"
    assert secrets_in(run.recorded) == []
