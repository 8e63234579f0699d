"""`[mcp_servers.NAME]` in config.toml: parsed into frozen `McpServerConfig` values."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from comal.config import Config, McpServerConfig, load_config
from comal.errors import ConfigError


def load(tmp_path: Path, toml: str, **env: str) -> Config:
    workspace = tmp_path / "ws"
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text(toml)
    return load_config(env={"HOME": str(tmp_path), **env}, cwd=workspace)


def test_stdio_and_http_servers_are_parsed_in_name_order(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """
[mcp_servers.zeta]
url = "https://mcp.example.com/${PATH_PART}/mcp"
headers = { Authorization = "Bearer ${TOKEN}" }
enabled = false

[mcp_servers.calc]
command = "python"
args = ["-m", "server", "--root=${ROOT}"]
env = { B = "2", A = "${TOKEN}" }
timeout_s = 12
startup_timeout_s = 3.5
""",
        TOKEN="t0k",
        ROOT="/srv",
        PATH_PART="v1",
    )
    assert list(config.mcp_servers) == ["calc", "zeta"]
    assert config.mcp_servers["calc"] == McpServerConfig(
        name="calc",
        command="python",
        args=("-m", "server", "--root=/srv"),
        env=(("A", "t0k"), ("B", "2")),
        timeout_s=12.0,
        startup_timeout_s=3.5,
    )
    zeta = config.mcp_servers["zeta"]
    assert zeta.url == "https://mcp.example.com/v1/mcp"
    assert zeta.headers == (("Authorization", "Bearer t0k"),)
    assert zeta.enabled is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        zeta.enabled = True  # type: ignore[misc]


def test_unset_variables_are_listed_not_fatal(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        '[mcp_servers.gh]\ncommand = "gh-mcp"\n'
        'env = { TOKEN = "${GH_TOKEN}", X = "${GH_TOKEN}" }\n',
    )
    assert config.mcp_servers["gh"].missing_env == ("GH_TOKEN",)
    assert load(tmp_path, "").mcp_servers == {}


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[mcp_servers.both]\ncommand = "x"\nurl = "http://h"\n', "exactly one of command"),
        ("[mcp_servers.neither]\nenabled = true\n", "exactly one of command"),
        ('[mcp_servers."has space"]\ncommand = "x"\n', "server name"),
        ('[mcp_servers.a__b]\ncommand = "x"\n', "server name"),
        ('[mcp_servers.s]\ncommand = "x"\nargs = "-v"\n', "args must be a list"),
        ('[mcp_servers.s]\ncommand = "x"\nargs = [1]\n', "must be a string"),
        ('[mcp_servers.s]\ncommand = "x"\nenv = ["A=1"]\n', "env must be a table"),
        ('[mcp_servers.s]\ncommand = "x"\ntimeout_s = 0\n', "timeout_s must be a positive"),
        ('[mcp_servers.s]\ncommand = "x"\nenabled = "no"\n', "enabled must be true or false"),
        ('[mcp_servers.s]\ncommand = ""\n', "must not be empty"),
        ('mcp_servers = ["x"]\n', "mcp_servers must be a table"),
    ],
)
def test_bad_server_tables_are_config_errors(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, toml)
