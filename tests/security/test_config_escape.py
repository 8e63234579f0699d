"""Escape through project configuration: a command or a native Write plants a hook or an MCP
server in a file the next session loads and runs outside the sandbox. Each attempt must fail:
the protected paths are read-only (and not creatable) under bubblewrap, a native Write to one
asks (headless: denied), and a project file nobody trusted runs nothing."""

from __future__ import annotations

import os
import pty
import select
import subprocess
from pathlib import Path

import pytest

from comal.config import PermissionsConfig, SandboxConfig
from comal.messages import JSONObject
from comal.testing.fake_server import FakeServer
from comal.tools.base import ToolContext
from comal.tools.edits import WriteTool
from comal.tools.permissions import PermissionPolicy
from comal.tools.sandbox import session_sandbox
from comal.tools.shell import BashTool
from tests.e2e.headless_support import COMAL, comal, comal_env, configure
from tests.sandbox_support import NEEDS_BUBBLEWRAP
from tests.security.support import attack, calls, hook_settings

pytestmark = NEEDS_BUBBLEWRAP

PROTECTED = (
    ".comal/config.toml",
    ".comal/commands/deploy.md",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/commands/deploy.md",
    ".mcp.json",
    "AGENTS.md",
    "COMAL.md",
    "CLAUDE.md",
    ".git/hooks/pre-commit",
    ".git/config",
)


def snapshot(workspace: Path) -> dict[str, bytes | None]:
    return {
        name: (workspace / name).read_bytes() if (workspace / name).is_file() else None
        for name in PROTECTED
    }


def listing(workspace: Path) -> list[str]:
    return sorted(p.name for p in workspace.iterdir())


def content(path: Path) -> str:
    return path.read_text()


def repository(workspace: Path, *, present: bool) -> None:
    """A git repository, with every protected file written when `present`."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    if present:
        for name in PROTECTED:
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_text(f"original {name}\n")


def sandboxed(workspace: Path) -> ToolContext:
    policy = PermissionPolicy(PermissionsConfig(mode="workspace-write"), workspace)
    box = session_sandbox("workspace-write", workspace, SandboxConfig())
    return ToolContext(workspace, policy, dict(os.environ), sandbox=box)


@pytest.mark.parametrize("present", [True, False], ids=["present", "missing"])
async def test_bash_cannot_create_change_or_move_a_protected_path(
    workspace: Path, present: bool
) -> None:
    repository(workspace, present=present)
    before = snapshot(workspace)
    listed = listing(workspace)
    writes = "; ".join(
        f"mkdir -p {Path(name).parent} 2>/dev/null; printf pwned > {name}" for name in PROTECTED
    )
    moves = "mv .claude moved-claude; mv .mcp.json moved.json; rm -rf .comal .git/hooks"
    command = f"{writes}; {moves}; printf ok > ordinary.txt"
    outcome = await BashTool().run({"command": command}, sandboxed(workspace), None)
    assert outcome.exit_code == 0, outcome.output.decode()
    assert snapshot(workspace) == before
    # The workspace stays writable for everything else, and no place holder is left.
    assert content(workspace / "ordinary.txt") == "ok"
    assert listing(workspace) == sorted([*listed, "ordinary.txt"])


async def test_a_native_write_to_a_protected_path_asks_in_every_mode_but_full_access(
    workspace: Path,
) -> None:
    for name in PROTECTED:
        arguments: JSONObject = {"path": name, "content": "{}"}
        for mode, verdict in (("workspace-write", "ask"), ("full-access", "allow")):
            policy = PermissionPolicy(PermissionsConfig(mode=mode), workspace)
            assert (name, policy.decide(WriteTool(), arguments).decision) == (name, verdict)
        denied = await PermissionPolicy(PermissionsConfig(), workspace).authorize(
            WriteTool(), arguments, interactive=False
        )
        assert (name, denied.decision) == (name, "deny")
    ordinary = PermissionPolicy(PermissionsConfig(), workspace).decide(
        WriteTool(), {"path": "src/app.py", "content": ""}
    )
    assert ordinary.decision == "allow"


def test_planting_a_hook_through_the_cli_fails_by_bash_and_by_write(
    tmp_path: Path, outside: Path
) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    settings = hook_settings(f"touch {outside}/hook-ran")
    planted = attack(
        workspace,
        home,
        calls(
            ("Bash", {"command": f"mkdir -p .claude && printf '%s' '{settings}' > "
                      ".claude/settings.json; printf '{{}}' > .mcp.json"}),
            ("Write", {"path": ".claude/settings.local.json", "content": settings}),
            ("Write", {"path": ".mcp.json", "content": '{"mcpServers": {}}'}),
        ),
    )  # fmt: skip
    assert planted.run.code == 0, planted.run.stderr
    bash, write_settings, write_mcp = planted.results
    assert bash["exit_code"] != 0
    assert "Is a directory" in bash["output"] or "Read-only" in bash["output"]
    assert write_settings["status"] == "denied"
    assert ".claude/settings.local.json is protected" in write_settings["output"]
    assert write_mcp["status"] == "denied"
    assert not (workspace / ".claude").exists()
    assert not (workspace / ".mcp.json").exists()
    # The next session runs nothing planted.
    again = attack(workspace, home, calls(("Bash", {"command": "true"})))
    assert again.run.code == 0
    assert not (outside / "hook-ran").exists()


def test_an_untrusted_project_hook_runs_only_once_trusted_and_again_not_once_changed(
    tmp_path: Path, outside: Path
) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    marker = outside / "hook-ran"
    (workspace / ".claude").mkdir(parents=True)
    (workspace / ".claude" / "settings.json").write_text(hook_settings(f"touch {marker}"))
    first = attack(workspace, home, calls(("Bash", {"command": "true"})))
    assert first.run.code == 0
    assert "settings.json configures hooks and is new or changed" in first.run.stderr
    assert not marker.exists()

    trusted = comal("trust", "--yes", cwd=workspace, env_home=home)
    assert trusted.code == 0, trusted.stderr
    assert "trusted 1 file(s)" in trusted.stderr
    assert str(workspace) not in str(sorted(home.rglob("trusted-projects.json")))
    trusted_run = attack(workspace, home, calls(("Bash", {"command": "true"})))
    assert trusted_run.run.code == 0
    assert marker.exists()

    marker.unlink()
    with (workspace / ".claude" / "settings.json").open("a") as fh:
        fh.write("\n")
    changed = attack(workspace, home, calls(("Bash", {"command": "true"})))
    assert "new or changed" in changed.run.stderr
    assert not marker.exists()


def test_on_a_terminal_the_untrusted_file_is_shown_and_trusted_on_yes(
    tmp_path: Path, outside: Path
) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    marker = outside / "hook-ran"
    (workspace / ".claude").mkdir(parents=True)
    (workspace / ".claude" / "settings.json").write_text(hook_settings(f"touch {marker}"))
    with FakeServer(calls(("Bash", {"command": "true"}))) as server:
        configure(workspace, server, "openai-chat")
        shown = answer_on_a_terminal(workspace, home, "y\n")
    assert str(workspace / ".claude" / "settings.json") in shown
    assert f"touch {marker}" in shown  # the hook's command is shown before the question
    assert "trusted 1 file(s)" in shown
    assert marker.exists()


def answer_on_a_terminal(workspace: Path, home: Path, answer: str) -> str:
    """Run `comal -p go` with a terminal on stdin and stderr, answer the trust question, and
    return what the terminal showed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [*COMAL, "-p", "go"],
        cwd=workspace,
        env=comal_env(home),
        stdin=follower,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    shown = b""
    answered = False
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the run ended
                break
            if not chunk:
                break
            shown += chunk
            if not answered and b"[y/N]" in shown:
                os.write(leader, answer.encode())
                answered = True
        proc.wait(timeout=120)
    finally:
        proc.kill()
        proc.wait()
        os.close(leader)
    return shown.decode("utf-8", "replace")
