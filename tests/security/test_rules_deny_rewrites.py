"""Every row of `deny_rewrites.ROWS` against the shipped rule sets, read from a real config."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.config import PERMISSION_PRESETS, PermissionRule, load_config
from comal.errors import ConfigError
from comal.tools.permissions import PermissionPolicy
from comal.tools.rule_presets import PRESETS
from comal.tools.shell import BashTool
from tests.security.deny_rewrites import ASKED, DENIED, GAP, ROWS, UNCATCHABLE

VERDICT = {DENIED: "deny", ASKED: "ask", UNCATCHABLE: "allow"}

PRESET_CONFIG = '[permissions]\ndeny = [{ preset = "destructive-delete" }, { preset = "push" }]\n'


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> PermissionPolicy:
    workspace = tmp_path_factory.mktemp("ws")
    (workspace / ".comal").mkdir()
    (workspace / ".comal" / "config.toml").write_text(PRESET_CONFIG)
    config = load_config(env={"HOME": str(workspace)}, cwd=workspace)
    return PermissionPolicy(config.permissions, workspace)


def test_the_table_is_large_and_covers_every_kind() -> None:
    kinds = [expected for _, expected, _ in ROWS]
    assert len(ROWS) >= 80
    assert {kinds.count(k) > 0 for k in (DENIED, ASKED, UNCATCHABLE)} == {True}
    assert len([n for *_, n in ROWS if n == GAP]) == 15
    assert len({line for line, *_ in ROWS}) == len(ROWS)


@pytest.mark.parametrize(("line", "expected", "note"), ROWS, ids=[r[0] for r in ROWS])
def test_each_rewrite_gets_its_verdict(
    shipped: PermissionPolicy, line: str, expected: str, note: str
) -> None:
    decision = shipped.decide(BashTool(), {"command": line})
    assert decision.decision == VERDICT[expected], decision.reason
    if expected == DENIED:
        assert "of preset" in decision.reason


def test_presets_expand_with_the_action_of_their_list(tmp_path: Path) -> None:
    (tmp_path / ".comal").mkdir()
    (tmp_path / ".comal" / "config.toml").write_text('[permissions]\nask = [{ preset = "push" }]\n')
    config = load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert config.permissions.rules == (PermissionRule("ask", "Bash", "", preset="push"),)
    policy = PermissionPolicy(config.permissions, tmp_path)
    assert policy.rules == [
        PermissionRule("ask", "Bash", p, preset="push") for p in PRESETS["push"]
    ]
    assert policy.decide(BashTool(), {"command": "git send-pack r"}).decision == "ask"
    assert policy.decide(BashTool(), {"command": "rm -rf x"}).decision == "allow"


def test_an_unknown_preset_is_a_clear_config_error(tmp_path: Path) -> None:
    (tmp_path / ".comal").mkdir()
    (tmp_path / ".comal" / "config.toml").write_text(
        '[permissions]\ndeny = [{ preset = "everything" }]\n'
    )
    with pytest.raises(ConfigError, match="unknown permission preset 'everything'"):
        load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)


def test_the_config_knows_the_shipped_preset_names() -> None:
    assert set(PRESETS) == PERMISSION_PRESETS
