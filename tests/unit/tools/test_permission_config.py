"""`[permissions]` ask rules, `[sandbox]`, and rules written by "always allow"."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.config import PermissionRule, SandboxConfig, add_workspace_rule, load_config
from comal.errors import ConfigError


def write(workspace: Path, text: str) -> Path:
    path = workspace / ".comal" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_ask_rules_and_sandbox_are_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        '[permissions]\nask = [{ tool = "Bash", pattern = "git push *" }]\n'
        '[sandbox]\nwritable = ["/srv/cache"]\nnetwork = true\nrequired = true\n',
    )
    config = load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert config.permissions.rules == (PermissionRule("ask", "Bash", "git push *"),)
    assert config.sandbox == SandboxConfig(("/srv/cache",), network=True, required=True)


@pytest.mark.parametrize(
    "text", ["[sandbox]\nnetwork = 1\n", "[sandbox]\nwritable = '/x'\n", "sandbox = 3\n"]
)
def test_a_bad_sandbox_table_is_a_clear_error(tmp_path: Path, text: str) -> None:
    write(tmp_path, text)
    with pytest.raises(ConfigError, match="sandbox"):
        load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)


def test_rules_are_appended_to_an_inline_array_keeping_comments(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '# keep me\n[permissions]\nmode = "workspace-write"  # and me\n'
        'allow = [{ tool = "Bash", pattern = "pytest *" }]\n',
    )
    add_workspace_rule(tmp_path, PermissionRule("allow", "Bash", "git status *"))
    text = path.read_text()
    assert "# keep me" in text
    assert "# and me" in text
    rules = load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path).permissions.rules
    assert [r.pattern for r in rules] == ["pytest *", "git status *"]


def test_a_rule_creates_the_workspace_config(tmp_path: Path) -> None:
    path = add_workspace_rule(tmp_path, PermissionRule("allow", "Read", "/etc/hosts"))
    assert path == tmp_path / ".comal" / "config.toml"
    rules = load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path).permissions.rules
    assert rules == (PermissionRule("allow", "Read", "/etc/hosts"),)


def test_a_broken_config_is_not_overwritten(tmp_path: Path) -> None:
    path = write(tmp_path, "[permissions\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        add_workspace_rule(tmp_path, PermissionRule("allow", "Read", "/x"))
    assert path.read_text() == "[permissions\n"
