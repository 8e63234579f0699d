"""The permission policy: modes, rules, workspace escapes, and asking."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.config import PermissionRule, PermissionsConfig
from comal.errors import PathOutsideWorkspaceError, ToolError
from comal.messages import JSONObject
from comal.tools.base import Tool
from comal.tools.edits import EditTool, WriteTool
from comal.tools.files import ReadTool
from comal.tools.permissions import HEADLESS_DENIAL, AskHook, PermissionPolicy
from comal.tools.search import GlobTool, GrepTool
from comal.tools.shell import BashTool


def policy(
    workspace: Path,
    mode: str = "workspace-write",
    rules: tuple[PermissionRule, ...] = (),
    extra_roots: tuple[str, ...] = (),
    ask: AskHook | None = None,
) -> PermissionPolicy:
    return PermissionPolicy(PermissionsConfig(mode, rules, extra_roots), workspace, ask)


def write(path: str) -> JSONObject:
    return {"path": path, "content": "x"}


def test_workspace_write_mode(workspace: Path) -> None:
    p = policy(workspace)
    assert p.decide(WriteTool(), write("src/a.py")).decision == "allow"
    assert p.decide(BashTool(), {"command": "rm -rf build"}).decision == "allow"
    assert p.decide(ReadTool(), {"path": "a.py"}).decision == "allow"
    outside = p.decide(WriteTool(), write("/etc/passwd"))
    assert outside.decision == "ask"
    assert outside.mode == "workspace-write"
    assert "outside the workspace" in outside.reason


def test_read_only_mode(workspace: Path) -> None:
    p = policy(workspace, "read-only")
    cases: list[tuple[Tool, JSONObject]] = [
        (WriteTool(), write("a.py")),
        (EditTool(), {"path": "a.py", "edits": []}),
        (BashTool(), {"command": "ls"}),
    ]
    for tool, args in cases:
        verdict = p.decide(tool, args)
        assert verdict.decision == "deny", tool.spec.name
        assert verdict.reason == f"read-only mode does not allow {tool.spec.name}"
    assert p.decide(ReadTool(), {"path": "a.py"}).decision == "allow"
    assert p.decide(GrepTool(), {"pattern": "x"}).decision == "allow"
    assert p.decide(GlobTool(), {"pattern": "*"}).decision == "allow"
    assert p.decide(ReadTool(), {"path": "/etc/hostname"}).decision == "ask"


def test_full_access_mode_allows_outside_paths(workspace: Path) -> None:
    p = policy(workspace, "full-access")
    assert p.decide(WriteTool(), write("/tmp/elsewhere.txt")).decision == "allow"


def test_dotdot_and_symlink_escapes_are_caught(workspace: Path, tmp_path: Path) -> None:
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (workspace / "link").symlink_to(secret_dir)
    (workspace / "inner").mkdir()
    p = policy(workspace)
    assert p.decide(ReadTool(), {"path": "inner/../../secret/x"}).decision == "ask"
    assert p.decide(WriteTool(), write("link/x")).decision == "ask"
    assert p.decide(ReadTool(), {"path": "inner/../ok.txt"}).decision == "allow"
    with pytest.raises(PathOutsideWorkspaceError, match="outside the workspace"):
        p.check_path("link/x")
    with pytest.raises(PathOutsideWorkspaceError):
        p.check_path("../ws2/x")
    assert p.check_path("inner/../ok.txt") == workspace / "ok.txt"


def test_search_path_outside_needs_permission(workspace: Path) -> None:
    p = policy(workspace)
    assert p.decide(GrepTool(), {"pattern": "x", "path": ".."}).decision == "ask"
    assert p.decide(GlobTool(), {"pattern": "*", "path": "/"}).decision == "ask"


def test_extra_roots_are_inside(workspace: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    p = policy(workspace, extra_roots=(str(shared),))
    assert p.decide(WriteTool(), write(str(shared / "x"))).decision == "allow"
    assert p.check_path(str(shared / "x")) == shared / "x"


def test_deny_rule_wins_over_allow_rule(workspace: Path) -> None:
    rules = (
        PermissionRule("allow", "Bash", "*"),
        PermissionRule("deny", "Bash", "git push*"),
    )
    p = policy(workspace, rules=rules)
    denied = p.decide(BashTool(), {"command": "git push origin main"})
    assert denied.decision == "deny"
    assert denied.reason == "denied by deny rule Bash(git push*): git push origin main"
    allowed = p.decide(BashTool(), {"command": "git status"})
    assert allowed.reason == "allowed by allow rule Bash(*)"


def test_allow_rule_permits_outside_path_and_read_only_exception(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "notes"
    rules = (
        PermissionRule("allow", "Write", f"{outside}/*"),
        PermissionRule("allow", "Bash", "pytest*"),
    )
    p = policy(workspace, "read-only", rules=rules)
    assert p.decide(WriteTool(), write(str(outside / "n.md"))).decision == "allow"
    assert p.decide(BashTool(), {"command": "pytest -q"}).decision == "allow"
    assert p.decide(BashTool(), {"command": "rm x"}).decision == "deny"


def test_allow_rules_match_resolved_paths(workspace: Path) -> None:
    p = policy(workspace, rules=(PermissionRule("allow", "Read", "docs/*"),))
    # Matching the raw string would let `docs/*` cover an escape through "..".
    escape = p.decide(ReadTool(), {"path": "docs/../../../etc/passwd"})
    assert escape.decision == "ask"
    assert p.decide(ReadTool(), {"path": "./docs/a.md"}).reason.startswith("allowed by")


def test_deny_rule_on_path_pattern(workspace: Path) -> None:
    p = policy(workspace, rules=(PermissionRule("deny", "*", "*.env"),))
    assert p.decide(ReadTool(), {"path": "config/.env"}).decision == "deny"
    assert p.decide(WriteTool(), write("sub/../prod.env")).decision == "deny"
    assert p.decide(ReadTool(), {"path": "README.md"}).decision == "allow"


async def test_headless_turns_ask_into_deny(workspace: Path) -> None:
    p = policy(workspace)
    verdict = await p.authorize(WriteTool(), write("/etc/passwd"), interactive=False)
    assert verdict.decision == "deny"
    assert verdict.reason.startswith(HEADLESS_DENIAL)
    assert "outside the workspace" in verdict.reason
    inside = await p.authorize(WriteTool(), write("a.txt"), interactive=False)
    assert inside.decision == "allow"


async def test_interactive_hook_confirms_or_declines(workspace: Path) -> None:
    asked: list[tuple[str, JSONObject, str]] = []
    answers = [True, False]

    async def hook(name: str, arguments: JSONObject, reason: str) -> bool:
        asked.append((name, arguments, reason))
        return answers.pop(0)

    p = policy(workspace, ask=hook)
    yes = await p.authorize(WriteTool(), write("/tmp/x"), interactive=True)
    no = await p.authorize(WriteTool(), write("/tmp/y"), interactive=True)
    assert (yes.decision, no.decision) == ("allow", "deny")
    assert yes.reason.startswith("confirmed by the user")
    assert no.reason.startswith("declined by the user")
    assert [a[0] for a in asked] == ["Write", "Write"]
    assert asked[0][1] == write("/tmp/x")
    no_hook = await policy(workspace).authorize(WriteTool(), write("/tmp/z"), interactive=True)
    assert no_hook.decision == "deny"
    assert "no confirmation hook" in no_hook.reason


def test_bad_configuration_is_a_clear_error(workspace: Path) -> None:
    with pytest.raises(ToolError, match="unknown permission mode"):
        policy(workspace, "yolo")
    with pytest.raises(ToolError, match="allow, ask or deny"):
        policy(workspace, rules=(PermissionRule("maybe", "Bash"),))
