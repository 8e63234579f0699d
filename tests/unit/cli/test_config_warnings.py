"""Unknown config keys warn with the closest known key; a broken config file stops commands
that run a session but only warns for the read-only ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.cli.main import main
from comal.config import load_config
from comal.errors import ConfigError
from comal.ledger import Ledger


def _workspace_config(root: Path, text: str) -> Path:
    (root / ".comal").mkdir(parents=True, exist_ok=True)
    path = root / ".comal" / "config.toml"
    path.write_text(text)
    return path


def test_a_typo_warns_with_the_closest_key(tmp_path: Path) -> None:
    _workspace_config(
        tmp_path,
        'cheks = ["pytest"]\n[context]\nthreshhold_ratio = 0.8\n'
        '[providers.local]\nwire = "openai-chat"\nbase_url = "http://x"\nmodle = "m"\n'
        '[providers.local.headers]\nX-Anything = "fine"\n'
        '[permissions]\ndeny = [{ tool = "Bash", patern = "rm *" }]\n',
    )
    config = load_config(cwd=tmp_path)
    text = "\n".join(config.warnings)
    assert "unknown key `cheks` (did you mean `checks`?)" in text
    assert "`context.threshhold_ratio` (did you mean `context.threshold_ratio`?)" in text
    assert "`providers.local.modle` (did you mean `providers.local.model`?)" in text
    assert "`permissions.deny[0].patern` (did you mean `permissions.deny[0].pattern`?)" in text
    assert "X-Anything" not in text  # headers are free-form
    assert len(config.warnings) == 4


def test_known_keys_do_not_warn(tmp_path: Path) -> None:
    _workspace_config(
        tmp_path,
        'checks = ["pytest"]\nmax_turns = 9\n[context]\nthreshold_ratio = 0.8\n'
        '[permissions]\nmode = "read-only"\n[agents]\nenabled = false\nmax_parallel = 2\n',
    )
    assert load_config(cwd=tmp_path).warnings == ()


def test_a_wrong_type_is_a_config_error_not_a_crash(tmp_path: Path) -> None:
    _workspace_config(tmp_path, 'max_turns = "many"\n')
    with pytest.raises(ConfigError, match="invalid configuration value"):
        load_config(cwd=tmp_path)


def test_the_cli_prints_the_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _workspace_config(tmp_path, 'cheks = ["pytest"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["sessions"]) == 0
    assert "did you mean `checks`?" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [
        ["sessions"],
        ["show", "SID"],
        ["verify"],
        ["state", "SID"],
        ["context", "SID"],
        ["checkpoints", "SID"],
    ],
)
def test_a_broken_config_does_not_stop_read_only_commands(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Ledger.open(load_config().ledger_path) as ledger:
        sid = ledger.create_session(cwd=str(tmp_path))
    _workspace_config(tmp_path, "default_provider = [broken\n")
    monkeypatch.chdir(tmp_path)
    assert main([sid if arg == "SID" else arg for arg in command]) == 0
    err = capsys.readouterr().err
    assert "invalid TOML" in err
    assert "ignored for this read-only command" in err


def test_a_broken_config_stops_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _workspace_config(tmp_path, "default_provider = [broken\n")
    monkeypatch.chdir(tmp_path)
    assert main(["-p", "hi"]) == 2
    assert "invalid TOML" in capsys.readouterr().err


def test_every_documented_table_is_known_and_its_typos_still_warn(tmp_path: Path) -> None:
    # `[agents]`, `[[hooks.EVENT]]`, `[prices."model"]` and a provider's `reasoning_effort`
    # are read and applied: they must not be reported as typos, and their misspellings must.
    _workspace_config(
        tmp_path,
        '[providers.local]\nwire = "openai-chat"\nbase_url = "http://x"\nmodel = "m"\n'
        'reasoning_effort = "high"\n'
        "[agents]\nenabled = true\nmax_parallel = 2\nmax_turns = 9\nmax_tokens = 5000\n"
        '[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "true"\ntimeout_s = 5\n'
        '[[hooks.Stop]]\ncommand = "true"\ncomand = "x"\n'
        '[prices."m"]\ninput = 1.0\ncached_input = 0.1\ncache_write = 1.25\noutput = 4.0\n'
        'as_of = "2026-12"\noutptu = 3\n',
    )
    config = load_config(cwd=tmp_path)
    text = "\n".join(config.warnings)
    assert "`hooks.Stop[0].comand` (did you mean `hooks.Stop[0].command`?)" in text
    assert "`prices.m.outptu` (did you mean `prices.m.output`?)" in text
    assert len(config.warnings) == 2
    assert config.agents.max_parallel == 2
    assert [h.event for h in config.hooks] == ["PreToolUse", "Stop"]
    assert config.prices["m"].output == 4.0
