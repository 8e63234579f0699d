"""MCP servers as tool providers, over real stdio against `comal.testing.mcp_server`.

One server process serves the whole module (starting one takes about a second); the failure
tests start their own short-lived commands.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from comal.agent.core.tool_runner import ToolRunner
from comal.config import McpServerConfig, PermissionRule, PermissionsConfig
from comal.messages import JSONObject, ToolCallPart, digest_bytes
from comal.testing.mcp_server import PNG_1X1, McpHttpServer, big_text
from comal.tools.base import Tool, ToolContext, ToolRegistry
from comal.tools.mcp import McpToolset, is_mcp_tool, open_mcp_servers
from comal.tools.permissions import PermissionPolicy

pytestmark = pytest.mark.asyncio(loop_scope="module")

CALC = McpServerConfig(
    "calc", command=sys.executable, args=("-m", "comal.testing.mcp_server"), timeout_s=30
)


@pytest.fixture(scope="module", params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    """Each transport the server is reached by: what the tools do must not depend on it."""
    return str(request.param)


@pytest.fixture(scope="module")
def server_dir(tmp_path_factory: pytest.TempPathFactory, transport: str) -> Path:
    return tmp_path_factory.mktemp(f"mcp-{transport}-ws").resolve()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def calc(transport: str, server_dir: Path) -> AsyncIterator[McpToolset]:
    if transport == "stdio":
        async with open_mcp_servers(
            [CALC], env=dict(os.environ), cwd=server_dir, log_dir=server_dir / "logs"
        ) as toolset:
            assert toolset.failures == ()
            yield toolset
        return
    with McpHttpServer(server_dir) as server:
        config = McpServerConfig("calc", url=server.url, timeout_s=30)
        async with open_mcp_servers([config], env={}, cwd=server_dir) as toolset:
            assert toolset.failures == ()
            yield toolset


def tool(toolset: McpToolset, name: str) -> Tool:
    found = [t for t in toolset.tools if t.spec.name == name]
    assert found, [t.spec.name for t in toolset.tools]
    return found[0]


def context(workspace: Path, rules: tuple[PermissionRule, ...] = ()) -> ToolContext:
    policy = PermissionPolicy(PermissionsConfig(rules=rules), workspace)
    return ToolContext(workspace, policy, dict(os.environ))


async def test_server_tools_are_offered_under_prefixed_names(calc: McpToolset) -> None:
    names = [t.spec.name for t in calc.tools]
    assert names == sorted(names)
    assert set(names) == {
        f"mcp__calc__{n}"
        for n in ("add", "big", "crash", "data", "echo", "fail", "image", "note", "sleep")
    }
    add = tool(calc, "mcp__calc__add")
    assert add.spec.description == "Add two integers and return the sum."
    params = add.spec.parameters
    assert params["type"] == "object"
    assert params["required"] == ["a", "b"]
    assert isinstance(params["properties"], dict)
    assert set(params["properties"]) == {"a", "b"}
    assert add.read_only is False
    assert add.target({"a": 1, "b": 2}) == "mcp__calc__add"
    assert add.paths({"a": 1, "b": 2}) == ()
    assert all(is_mcp_tool(t) for t in calc.tools)


async def test_calls_return_exactly_what_the_server_sent(
    calc: McpToolset, server_dir: Path
) -> None:
    ctx = context(server_dir)
    added = await tool(calc, "mcp__calc__add").run({"a": 40, "b": 2}, ctx, None)
    assert (added.output, added.is_error, added.status) == (b"42", False, "ok")
    text = "héllo\n\twörld ✓"
    echoed = await tool(calc, "mcp__calc__echo").run({"text": text}, ctx, None)
    assert echoed.output == text.encode()
    size = 60_000
    big = await tool(calc, "mcp__calc__big").run({"size": size}, ctx, None)
    # No truncation and nothing added: the receipt holds the server's bytes only.
    assert len(big.output) == size
    assert digest_bytes(big.output) == digest_bytes(big_text(size).encode())


async def test_error_results_and_bad_arguments_are_error_outcomes(
    calc: McpToolset, server_dir: Path
) -> None:
    ctx = context(server_dir)
    failed = await tool(calc, "mcp__calc__fail").run({"reason": "disk on fire"}, ctx, None)
    assert (failed.output, failed.is_error, failed.status) == (b"disk on fire", True, "error")
    bad = await tool(calc, "mcp__calc__add").run({"a": "forty", "b": 2}, ctx, None)
    assert bad.is_error
    assert b"add" in bad.output


async def test_images_and_structured_content(calc: McpToolset, server_dir: Path) -> None:
    ctx = context(server_dir)
    image = await tool(calc, "mcp__calc__image").run({}, ctx, None)
    assert [(m.media_type, m.data_b64) for m in image.media] == [("image/png", PNG_1X1)]
    assert image.output == b""
    data = await tool(calc, "mcp__calc__data").run({"key": "k"}, ctx, None)
    assert data.output == b'{"key":"k","values":[3,1,2]}'


async def test_cancel_stops_the_call_and_the_server_keeps_serving(
    calc: McpToolset, server_dir: Path
) -> None:
    ctx = context(server_dir)
    ctx.cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.3, ctx.cancel.set)
    started = time.monotonic()
    outcome = await tool(calc, "mcp__calc__sleep").run({"seconds": 30}, ctx, None)
    assert time.monotonic() - started < 10
    assert outcome.is_error
    assert b"cancelled" in outcome.output
    assert b"unknown" in outcome.output
    ctx.cancel = None
    again = await tool(calc, "mcp__calc__add").run({"a": 1, "b": 2}, ctx, None)
    assert again.output == b"3"


def _runner(
    toolset: McpToolset, workspace: Path, rules: tuple[PermissionRule, ...]
) -> tuple[ToolRunner, list[tuple[str, JSONObject]]]:
    ctx = context(workspace, rules)
    recorded: list[tuple[str, JSONObject]] = []
    runner = ToolRunner(
        ToolRegistry(list(toolset.tools)),
        ctx.permissions,
        ctx,
        lambda record, body: recorded.append((record.KIND, record.to_payload())),
    )
    return runner, recorded


async def test_a_deny_rule_on_the_server_refuses_its_tools(
    calc: McpToolset, server_dir: Path
) -> None:
    target = server_dir / "denied.txt"
    runner, recorded = _runner(calc, server_dir, (PermissionRule("deny", "mcp__calc__*"),))
    call = ToolCallPart("c1", "mcp__calc__note", {"path": "denied.txt", "text": "x"})
    receipt = await runner.run(call)
    assert receipt.status == "denied"
    assert not target.exists()
    started = recorded[0][1]["permission"]
    assert isinstance(started, dict)
    assert "mcp__calc__*" in str(started["reason"])


async def test_rules_for_other_servers_leave_these_tools_alone(
    calc: McpToolset, server_dir: Path
) -> None:
    rules = (
        PermissionRule("deny", "mcp__github__*"),
        PermissionRule("deny", "mcp__*", "mcp__calc__echo"),
    )
    runner, _ = _runner(calc, server_dir, rules)
    call = ToolCallPart("c2", "mcp__calc__note", {"path": "allowed.txt", "text": "kept"})
    receipt = await runner.run(call)
    assert receipt.status == "ok"
    assert (server_dir / "allowed.txt").read_text() == "kept\n"
    echo = await runner.run(ToolCallPart("c3", "mcp__calc__echo", {"text": "hi"}))
    assert echo.status == "denied"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_servers_that_cannot_start_become_failures(tmp_path: Path) -> None:
    python = sys.executable
    servers = [
        McpServerConfig(
            "crashes",
            command=python,
            args=("-c", "import sys; sys.stderr.write('token missing\\n'); sys.exit(3)"),
        ),
        McpServerConfig("absent", command=str(tmp_path / "no-such-server")),
        McpServerConfig("web", url=f"http://127.0.0.1:{_closed_port()}/mcp"),
        McpServerConfig("keyless", command=python, missing_env=("GITHUB_TOKEN",)),
        McpServerConfig(
            "silent",
            command=python,
            args=("-c", "import sys; sys.stdin.read()"),
            startup_timeout_s=0.5,
        ),
        McpServerConfig("off", command=str(tmp_path / "never-run"), enabled=False),
    ]
    started = time.monotonic()
    async with open_mcp_servers(
        servers, env=dict(os.environ), cwd=tmp_path, log_dir=tmp_path / "logs"
    ) as toolset:
        assert toolset.tools == ()
        messages = {f.server: f.message for f in toolset.failures}
    assert time.monotonic() - started < 15
    assert list(messages) == ["absent", "crashes", "keyless", "silent", "web"]
    assert "token missing" in messages["crashes"]
    assert "no-such-server" in messages["absent"]
    assert messages["keyless"] == "MCP server 'keyless' not started: GITHUB_TOKEN is not set"
    assert "within 0.5 s" in messages["silent"]
    assert messages["web"].startswith("MCP server 'web' is unavailable: ")
    assert (tmp_path / "logs" / "mcp-crashes.log").read_text() == "token missing\n"


async def test_no_enabled_server_starts_nothing(tmp_path: Path) -> None:
    off = McpServerConfig("off", command=str(tmp_path / "never-run"), enabled=False)
    async with open_mcp_servers([off], env={}, cwd=tmp_path) as toolset:
        assert toolset == McpToolset()


async def test_a_server_that_dies_mid_session_only_fails_its_own_calls(tmp_path: Path) -> None:
    async with open_mcp_servers([CALC], env=dict(os.environ), cwd=tmp_path) as toolset:
        ctx = context(tmp_path)
        died = await tool(toolset, "mcp__calc__crash").run({}, ctx, None)
        assert died.is_error
        assert b"unknown" in died.output
        after = await tool(toolset, "mcp__calc__add").run({"a": 1, "b": 2}, ctx, None)
        assert after.is_error
        assert after.output == (
            b"MCP server 'calc' is not available (its connection closed); add was not called"
        )
