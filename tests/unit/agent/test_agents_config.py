"""`[agents]`: child-session limits, read once with the rest of the configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.config import AgentsConfig, load_config
from comal.errors import ConfigError


def config_with(tmp_path: Path, text: str) -> Path:
    (tmp_path / ".comal").mkdir()
    (tmp_path / ".comal" / "config.toml").write_text(text)
    return tmp_path


def test_defaults_and_given_values(tmp_path: Path) -> None:
    env = {"COMAL_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "x")}
    # Unset: offered when the window has room for the schemas (`offers_delegation`).
    assert load_config(env, cwd=tmp_path).agents == AgentsConfig(4, 20, None, None)
    ws = tmp_path / "ws"
    ws.mkdir()
    config_with(
        ws, "[agents]\nmax_parallel = 2\nmax_turns = 5\nmax_tokens = 9000\nenabled = false\n"
    )
    assert load_config(env, cwd=ws).agents == AgentsConfig(2, 5, 9000, False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[agents]\nmax_parallel = 0\n", "agents.max_parallel must be a positive integer"),
        ("[agents]\nmax_turns = 'ten'\n", "agents.max_turns must be a positive integer"),
        ("[agents]\nenabled = 'yes'\n", "agents.enabled must be true or false"),
        ("[agents]\nparallel = 3\n", "unknown \\[agents\\] keys: parallel"),
    ],
)
def test_bad_values_are_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    env = {"COMAL_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "x")}
    with pytest.raises(ConfigError, match=message):
        load_config(env, cwd=config_with(tmp_path, text))


def test_delegation_is_offered_by_default_only_when_the_window_has_room_for_it(
    tmp_path: Path,
) -> None:
    from comal.agent.children.run import DELEGATION_MIN_WINDOW, offers_delegation
    from comal.config import load_config

    env = {"COMAL_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "x")}
    unset = load_config(env, cwd=tmp_path)
    assert offers_delegation(unset, DELEGATION_MIN_WINDOW)
    assert not offers_delegation(unset, 4_096)
    (tmp_path / ".comal").mkdir()
    (tmp_path / ".comal" / "config.toml").write_text("[agents]\nenabled = true\n")
    forced = load_config(env, cwd=tmp_path)
    assert offers_delegation(forced, 4_096)
