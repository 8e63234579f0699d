"""`.mcp.json` in the workspace is read beside TOML; TOML wins on a name clash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from comal.config import McpServerConfig, load_config
from comal.errors import ConfigError


def workspace_with(tmp_path: Path, mcp_json: object, toml: str = "") -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    text = mcp_json if isinstance(mcp_json, str) else json.dumps(mcp_json)
    (ws / ".mcp.json").write_text(text, encoding="utf-8")
    if toml:
        (ws / ".comal").mkdir()
        (ws / ".comal" / "config.toml").write_text(toml, encoding="utf-8")
    return ws


def test_stdio_http_and_sse_entries(tmp_path: Path) -> None:
    ws = workspace_with(
        tmp_path,
        {
            "mcpServers": {
                "github": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
                },
                "docs": {
                    "type": "http",
                    "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${DOCS_TOKEN:-none}"},
                },
                "old": {"type": "sse", "url": "http://127.0.0.1:3001/sse"},
                "typed": {"type": "stdio", "command": "srv", "alwaysAllow": ["x"]},
            }
        },
    )
    servers = load_config(env={"HOME": str(tmp_path), "GITHUB_TOKEN": "t0k"}, cwd=ws).mcp_servers
    assert list(servers) == ["docs", "github", "old", "typed"]
    assert servers["github"] == McpServerConfig(
        "github",
        command="npx",
        args=("-y", "@modelcontextprotocol/server-github"),
        env=(("GITHUB_PERSONAL_ACCESS_TOKEN", "t0k"),),
        source=".mcp.json",
    )
    assert servers["docs"].url == "https://mcp.example.com/mcp"
    assert servers["docs"].transport == "http"
    assert servers["docs"].headers == (("Authorization", "Bearer none"),)
    assert servers["docs"].missing_env == ()
    assert servers["old"].transport == "sse"
    assert servers["typed"].command == "srv"


def test_toml_wins_on_a_name_clash(tmp_path: Path) -> None:
    ws = workspace_with(
        tmp_path,
        {"mcpServers": {"calc": {"command": "from-json"}, "extra": {"command": "x"}}},
        '[mcp_servers.calc]\ncommand = "from-toml"\n',
    )
    servers = load_config(env={"HOME": str(tmp_path)}, cwd=ws).mcp_servers
    assert servers["calc"].command == "from-toml"
    assert servers["calc"].source == "config.toml"
    assert servers["extra"].source == ".mcp.json"


def test_an_unset_variable_is_reported_missing(tmp_path: Path) -> None:
    ws = workspace_with(tmp_path, {"mcpServers": {"g": {"command": "s", "env": {"T": "${NOPE}"}}}})
    assert load_config(env={"HOME": str(tmp_path)}, cwd=ws).mcp_servers["g"].missing_env == (
        "NOPE",
    )


def test_no_file_or_no_servers_is_nothing(tmp_path: Path) -> None:
    assert load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path).mcp_servers == {}
    ws = workspace_with(tmp_path, {"other": 1})
    assert load_config(env={"HOME": str(tmp_path)}, cwd=ws).mcp_servers == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"\.mcp\.json: invalid JSON"),
        ({"mcpServers": []}, "mcpServers must be an object"),
        ({"mcpServers": {"a": "npx"}}, r"\.mcp\.json: mcpServers\.a must be an object"),
        ({"mcpServers": {"a": {"type": "ws", "url": "x"}}}, "type must be stdio, http or sse"),
        ({"mcpServers": {"a": {"type": "http"}}}, "needs exactly one of command"),
        ({"mcpServers": {"a.b": {"command": "x"}}}, "a server name is 1-32 letters"),
    ],
)
def test_bad_entries_are_clear_errors(tmp_path: Path, content: object, message: str) -> None:
    ws = workspace_with(tmp_path, content)
    with pytest.raises(ConfigError, match=message):
        load_config(env={"HOME": str(tmp_path)}, cwd=ws)
