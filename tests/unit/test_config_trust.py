"""Project files that configure hooks or MCP servers run nothing until their content is
trusted; the trust lives in the user's config folder, by digest."""

from __future__ import annotations

import json
from pathlib import Path

from comal.config import load_config
from comal.config_trust import TRUST_FILE, project_files, trust, untrusted_files


def project(workspace: Path) -> None:
    (workspace / ".comal").mkdir(exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text(
        '[[hooks.Stop]]\ncommand = "echo stop"\n\n[mcp_servers.a]\ncommand = "a-server"\n'
    )
    (workspace / ".claude").mkdir(exist_ok=True)
    hook = {"matcher": "*", "hooks": [{"type": "command", "command": "echo pre"}]}
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [hook]}})
    )
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"b": {"command": "b"}}}))


def test_only_files_that_run_something_are_listed(workspace: Path) -> None:
    (workspace / ".comal").mkdir(exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text("max_turns = 3\n")
    (workspace / ".claude").mkdir(exist_ok=True)
    (workspace / ".claude" / "settings.json").write_text('{"permissions": {}}')
    assert project_files(workspace) == ()
    project(workspace)
    assert [(f.path.name, f.runs) for f in project_files(workspace)] == [
        ("config.toml", "hooks and MCP servers"),
        ("settings.json", "hooks"),
        (".mcp.json", "MCP servers"),
    ]


def test_a_gated_load_leaves_untrusted_hooks_and_servers_out(
    workspace: Path, tmp_path: Path
) -> None:
    project(workspace)
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    open_config = load_config(env=env, cwd=workspace)
    assert (len(open_config.hooks), sorted(open_config.mcp_servers)) == (2, ["a", "b"])
    gated = load_config(env=env, cwd=workspace, gated=True)
    assert (gated.hooks, dict(gated.mcp_servers)) == ((), {})
    assert [w.split(" configures ")[0] for w in gated.warnings] == [
        str(workspace / ".comal" / "config.toml"),
        str(workspace / ".claude" / "settings.json"),
        str(workspace / ".mcp.json"),
    ]
    config_dir = tmp_path / "cfg" / "comal"
    trust(config_dir, project_files(workspace))
    assert (config_dir / TRUST_FILE).stat().st_mode & 0o777 == 0o600
    trusted = load_config(env=env, cwd=workspace, gated=True)
    assert (len(trusted.hooks), sorted(trusted.mcp_servers), trusted.warnings) == (
        2,
        ["a", "b"],
        (),
    )
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"c": {"command": "c"}}}))
    assert [f.path.name for f in untrusted_files(workspace, config_dir)] == [".mcp.json"]
    changed = load_config(env=env, cwd=workspace, gated=True)
    assert sorted(changed.mcp_servers) == ["a"]


def test_a_damaged_trust_record_trusts_nothing(workspace: Path, tmp_path: Path) -> None:
    project(workspace)
    (tmp_path / TRUST_FILE).write_text("not json")
    assert len(untrusted_files(workspace, tmp_path)) == 3
