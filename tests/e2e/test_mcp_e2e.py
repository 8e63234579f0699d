"""`comal -p` with configured MCP servers, against the loopback fake provider.

The model (scripted by the fake server) calls `mcp__calc__add` on a real stdio server
(`comal.testing.mcp_server`); a second configured server cannot start, which must leave a
warning and nothing else. The same server over Streamable HTTP, configured by `url`, serves a
tool call the same way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from comal.testing.mcp_server import McpHttpServer
from tests.e2e.headless_support import comal_here as comal
from tests.e2e.headless_support import configure, ledger_at, trust_project

pytestmark = pytest.mark.e2e


def add_mcp_servers(workspace: Path) -> None:
    config = workspace / ".comal" / "config.toml"
    lines = [
        "",
        "[mcp_servers.calc]",
        f"command = {json.dumps(sys.executable)}",
        'args = ["-m", "comal.testing.mcp_server"]',
        "",
        "[mcp_servers.broken]",
        f"command = {json.dumps(str(workspace / 'no-such-mcp-server'))}",
    ]
    config.write_text(config.read_text() + "\n".join(lines) + "\n")


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def test_the_model_calls_an_mcp_tool_through_comal(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    turns: list[Any] = [
        {
            "tool_calls": [
                {"id": "call_add", "name": "mcp__calc__add", "arguments": {"a": 40, "b": 2}}
            ]
        },
        "The sum is 42.",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        add_mcp_servers(workspace)
        trust_project(workspace, home)
        run = comal(
            "-p", "add 40 and 2", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr + run.stdout[-2000:]
        stats = server.stats()
        assert (stats.requests, stats.orphan_violations, stats.unexpected_requests) == (2, 0, 0)
        first, second = (dict[str, Any](request.body) for request in server.received)
    assert "mcp__calc__add" in tool_names(first)
    assert tool_names(first) == tool_names(second)
    assert not any(name.startswith("mcp__broken__") for name in tool_names(first))
    tool_messages = [m for m in second["messages"] if m.get("role") == "tool"]
    assert tool_messages == [{"role": "tool", "tool_call_id": "call_add", "content": "42"}]

    notices = [e for e in run.events() if e["type"] == "notice"]
    assert [e["code"] for e in notices] == ["MCP_SERVER_UNAVAILABLE"]
    assert "broken" in str(notices[0]["message"])
    session_id = run.session_id()
    with ledger_at(home) as ledger:
        kinds = [e.kind for e in ledger.entries(session_id)]
        (result,) = ledger.entries(session_id, kinds=("tool.result",))
        assert ledger.body(result) == b"42"
    assert "session.tools" in kinds
    assert "warning" in kinds
    assert (home / "logs" / "mcp-calc.log").exists()

    shown = comal("context", session_id, "--json", cwd=workspace, env_home=home)
    assert shown.code == 0, shown.stderr
    rows = {row["name"]: row["tokens"] for row in json.loads(shown.stdout)["rows"]}
    assert rows["MCP tools"] > 0
    verified = comal("verify", session_id, cwd=workspace, env_home=home)
    assert verified.code == 0, verified.stderr


def test_the_model_calls_a_tool_of_a_server_configured_by_url(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    served = tmp_path / "served"
    served.mkdir()
    home = tmp_path / "home"
    turns: list[Any] = [
        {
            "tool_calls": [
                {
                    "id": "call_note",
                    "name": "mcp__web__note",
                    "arguments": {"path": "seen.txt", "text": "over http"},
                },
                {"id": "call_fail", "name": "mcp__web__fail", "arguments": {"reason": "nope"}},
            ]
        },
        "Noted.",
    ]
    with McpHttpServer(served, name="web") as mcp, FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        config = workspace / ".comal" / "config.toml"
        config.write_text(
            config.read_text() + f"\n[mcp_servers.web]\nurl = {json.dumps(mcp.url)}\n"
        )
        trust_project(workspace, home)
        run = comal("-p", "note it", "--output-format", "stream-json", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr + run.stdout[-2000:]
        stats = server.stats()
        assert (stats.requests, stats.orphan_violations, stats.unexpected_requests) == (2, 0, 0)
        first, second = (dict[str, Any](request.body) for request in server.received)
        # The server keeps serving after Comal's session ended.
        assert mcp.returncode is None
    assert {"mcp__web__add", "mcp__web__note"} <= set(tool_names(first))
    assert tool_names(first) == tool_names(second)
    # The effect happened where the server runs, not in Comal's workspace.
    assert (served / "seen.txt").read_text() == "over http\n"
    assert not (workspace / "seen.txt").exists()
    tool_messages = [m for m in second["messages"] if m.get("role") == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("call_note", "noted in seen.txt"),
        ("call_fail", "nope"),
    ]
    assert [e for e in run.events() if e["type"] == "notice"] == []
    with ledger_at(home) as ledger:
        results = ledger.entries(run.session_id(), kinds=("tool.result",))
        assert [(e.payload["status"], ledger.body(e)) for e in results] == [
            ("ok", b"noted in seen.txt"),
            ("error", b"nope"),
        ]


def files_holding(root: Path, secret: str) -> list[Path]:
    """Every file under `root` whose bytes contain `secret` (ledger, its WAL, blobs, logs)."""
    needle = secret.encode()
    return [p for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]


def test_a_url_server_header_from_the_environment_is_sent_and_never_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    token, stale = "t0ken-from-the-env", "st4le-t0ken"
    turns: list[Any] = [
        {
            "tool_calls": [
                {"id": "call_add", "name": "mcp__web__add", "arguments": {"a": 1, "b": 2}}
            ]
        },
        "The sum is 3.",
        "No web tools this time.",
    ]
    guard = f"Authorization: Bearer {token}"
    with (
        McpHttpServer(tmp_path, name="web", require_header=guard) as mcp,
        FakeServer(turns) as server,
    ):
        configure(workspace, server, "openai-chat")
        config = workspace / ".comal" / "config.toml"
        config.write_text(
            config.read_text() + f"\n[mcp_servers.web]\nurl = {json.dumps(mcp.url)}\n"
            'headers = { Authorization = "Bearer ${WEB_MCP_TOKEN}" }\n'
        )
        monkeypatch.setenv("WEB_MCP_TOKEN", token)
        trust_project(workspace, home)
        ok = comal(
            "-p", "add 1 and 2", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert ok.code == 0, ok.stderr + ok.stdout[-2000:]
        monkeypatch.setenv("WEB_MCP_TOKEN", stale)
        refused = comal(
            "-p", "try again", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert refused.code == 0, refused.stderr + refused.stdout[-2000:]
        bodies = [dict[str, Any](r.body) for r in server.received]
        sent = [r.headers for r in server.received]
    assert "mcp__web__add" in tool_names(bodies[0])
    assert not any(name.startswith("mcp__web__") for name in tool_names(bodies[2]))
    assert [e for e in ok.events() if e["type"] == "notice"] == []
    (notice,) = [e for e in refused.events() if e["type"] == "notice"]
    assert notice["code"] == "MCP_SERVER_UNAVAILABLE"
    assert str(notice["message"]).startswith(
        "MCP server 'web' is unavailable: HTTP 401 Unauthorized (check mcp_servers.web.headers)"
    )
    with ledger_at(home) as ledger:
        (result,) = ledger.entries(ok.session_id(), kinds=("tool.result",))
        assert (result.payload["status"], ledger.body(result)) == ("ok", b"3")
        (warning,) = ledger.entries(refused.session_id(), kinds=("warning",))
        assert warning.payload["message"] == notice["message"]
    for secret in (token, stale):
        assert secret not in ok.stdout + ok.stderr + refused.stdout + refused.stderr
        assert files_holding(home, secret) == []
        # The MCP header goes to the MCP server only, never to the model provider.
        assert secret not in json.dumps(sent) + json.dumps(bodies)
    for run in (ok, refused):
        verified = comal("verify", run.session_id(), cwd=workspace, env_home=home)
        assert verified.code == 0, verified.stderr
