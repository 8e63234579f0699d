"""MCP servers configured by `url`: Streamable HTTP against a real `comal.testing.mcp_server`.

What tools do over either transport (listing, results, errors, cancel, permission rules) is
tested over both in `test_mcp.py`; this module holds what only HTTP has.

The server runs as a subprocess on 127.0.0.1 (`McpHttpServer`); one serves the whole module,
another one that requires an `Authorization` header serves the `headers` tests, and the tests
where the server goes away start their own.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest
import pytest_asyncio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from comal.config import Config, McpServerConfig, PermissionsConfig, load_config
from comal.messages import digest_bytes
from comal.testing.mcp_server import PNG_1X1, McpHttpServer, big_text
from comal.tools.base import ToolContext
from comal.tools.mcp import McpToolset, open_mcp_servers
from comal.tools.permissions import PermissionPolicy
from tests.unit.tools.test_mcp import tool

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def server_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-http-ws").resolve()


@pytest.fixture(scope="module")
def http_server(server_dir: Path) -> Iterator[McpHttpServer]:
    server = McpHttpServer(server_dir).start()
    try:
        yield server
    finally:
        server.stop()
    # Closing its stdin is a clean shutdown, even with a client's session still recorded.
    assert server.returncode == 0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def calc(http_server: McpHttpServer, server_dir: Path) -> AsyncIterator[McpToolset]:
    config = McpServerConfig("calc", url=http_server.url, timeout_s=30)
    async with open_mcp_servers([config], env={}, cwd=server_dir) as toolset:
        assert toolset.failures == ()
        yield toolset


def context(workspace: Path) -> ToolContext:
    return ToolContext(workspace, PermissionPolicy(PermissionsConfig(), workspace), {})


async def test_the_server_announces_a_loopback_url(http_server: McpHttpServer) -> None:
    assert http_server.url.startswith("http://127.0.0.1:")
    assert http_server.url.endswith("/mcp")
    assert http_server.returncode is None


async def test_text_and_structured_content(
    calc: McpToolset, http_server: McpHttpServer, server_dir: Path
) -> None:
    # The server answers `add` with a text block and structured content...
    async with (
        httpx2.AsyncClient() as http,
        Client(streamable_http_client(http_server.url, http_client=http)) as raw,
    ):
        result = await raw.call_tool("add", {"a": 40, "b": 2})
    assert result.structured_content == {"result": 42}
    assert [b.text for b in result.content if isinstance(b, TextContent)] == ["42"]
    # ...and the outcome keeps the text, without the same value twice.
    ctx = context(server_dir)
    added = await tool(calc, "mcp__calc__add").run({"a": 40, "b": 2}, ctx, None)
    assert (added.output, added.is_error, added.status) == (b"42", False, "ok")
    data = await tool(calc, "mcp__calc__data").run({"key": "k"}, ctx, None)
    assert data.output == b'{"key":"k","values":[3,1,2]}'
    text = "héllo\n\twörld ✓"
    echoed = await tool(calc, "mcp__calc__echo").run({"text": text}, ctx, None)
    assert echoed.output == text.encode()
    image = await tool(calc, "mcp__calc__image").run({}, ctx, None)
    assert [(m.media_type, m.data_b64) for m in image.media] == [("image/png", PNG_1X1)]
    noted = await tool(calc, "mcp__calc__note").run({"path": "n.txt", "text": "over"}, ctx, None)
    assert noted.output == b"noted in n.txt"
    assert (server_dir / "n.txt").read_text() == "over\n"


async def test_a_large_output_arrives_whole(calc: McpToolset, server_dir: Path) -> None:
    size = 1_500_000
    big = await tool(calc, "mcp__calc__big").run({"size": size}, context(server_dir), None)
    assert not big.is_error
    assert len(big.output) == size
    assert digest_bytes(big.output) == digest_bytes(big_text(size).encode())


async def test_a_wrong_path_is_a_clear_failure(http_server: McpHttpServer, tmp_path: Path) -> None:
    lost = McpServerConfig("lost", url=http_server.url.removesuffix("/mcp") + "/nowhere")
    async with open_mcp_servers([lost], env={}, cwd=tmp_path) as toolset:
        assert toolset.tools == ()
        (failure,) = toolset.failures
    assert failure.message.startswith("MCP server 'lost' is unavailable: ")
    assert failure.message.endswith("Not Found")


async def test_a_server_killed_mid_call_fails_that_call_and_later_ones(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    with McpHttpServer(tmp_path) as server:
        config = McpServerConfig("gone", url=server.url, timeout_s=60)
        async with open_mcp_servers([config], env={}, cwd=tmp_path) as toolset:
            first = await tool(toolset, "mcp__gone__add").run({"a": 1, "b": 1}, ctx, None)
            assert first.output == b"2"
            asyncio.get_running_loop().call_later(0.5, server.kill)
            started = time.monotonic()
            died = await tool(toolset, "mcp__gone__sleep").run({"seconds": 30}, ctx, None)
            # The call ends when the connection does, not at its 60 s timeout.
            assert time.monotonic() - started < 10
            assert server.returncode is not None
            assert died.is_error
            assert died.output.startswith(b"MCP gone/sleep failed: ")
            assert died.output.endswith(b"; whether it had an effect is unknown")
            after = await tool(toolset, "mcp__gone__add").run({"a": 1, "b": 2}, ctx, None)
            assert after.is_error
            assert after.output == (
                b"MCP server 'gone' is not available (its connection closed); add was not called"
            )


async def test_a_server_that_exits_while_answering(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    with McpHttpServer(tmp_path) as server:
        config = McpServerConfig("calc", url=server.url, timeout_s=60)
        async with open_mcp_servers([config], env={}, cwd=tmp_path) as toolset:
            started = time.monotonic()
            died = await tool(toolset, "mcp__calc__crash").run({}, ctx, None)
            assert time.monotonic() - started < 10
            assert died.is_error
            assert b"unknown" in died.output
            after = await tool(toolset, "mcp__calc__echo").run({"text": "x"}, ctx, None)
            assert after.is_error
            assert b"echo was not called" in after.output
        assert server.wait(10) == 7


TOKEN = "Bearer s3cret-0f-the-guard"
"""The `Authorization` value the guarded server requires."""


@pytest.fixture(scope="module")
def guarded(server_dir: Path) -> Iterator[McpHttpServer]:
    server = McpHttpServer(server_dir, name="guarded", require_header=f"Authorization: {TOKEN}")
    with server:
        yield server


def initialize_body() -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }


async def test_the_guarded_server_refuses_requests_without_its_header(
    guarded: McpHttpServer,
) -> None:
    accept = {"accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        bare = await http.post(guarded.url, json=initialize_body(), headers=accept)
        wrong = await http.post(
            guarded.url, json=initialize_body(), headers={**accept, "authorization": "Bearer no"}
        )
        right = await http.post(
            guarded.url, json=initialize_body(), headers={**accept, "authorization": TOKEN}
        )
    assert (bare.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert bare.json() == {"error": "invalid_token", "error_description": "Authentication required"}
    assert bare.headers["www-authenticate"].startswith('Bearer error="invalid_token"')


async def test_the_configured_header_lists_and_calls_tools(
    guarded: McpHttpServer, server_dir: Path
) -> None:
    config = McpServerConfig(
        "guarded", url=guarded.url, headers=(("Authorization", TOKEN),), timeout_s=30
    )
    async with open_mcp_servers([config], env={}, cwd=server_dir) as toolset:
        assert toolset.failures == ()
        assert "mcp__guarded__add" in [t.spec.name for t in toolset.tools]
        added = await tool(toolset, "mcp__guarded__add").run(
            {"a": 20, "b": 22}, context(server_dir), None
        )
    assert (added.output, added.is_error) == (b"42", False)


@pytest.mark.parametrize(
    "headers",
    [(), (("Authorization", "Bearer wrong-s3cret-value"),)],
    ids=["no-header", "wrong-value"],
)
async def test_a_refused_header_is_a_clear_failure_that_shows_no_value(
    guarded: McpHttpServer, server_dir: Path, headers: tuple[tuple[str, str], ...]
) -> None:
    config = McpServerConfig("guarded", url=guarded.url, headers=headers, startup_timeout_s=20)
    started = time.monotonic()
    async with open_mcp_servers([config], env={}, cwd=server_dir) as toolset:
        assert toolset.tools == ()
        (failure,) = toolset.failures
    # A refusal is an answer, not a timeout: the start does not wait out startup_timeout_s.
    assert time.monotonic() - started < 10
    assert failure.server == "guarded"
    assert failure.message.startswith(
        "MCP server 'guarded' is unavailable: HTTP 401 Unauthorized"
        " (check mcp_servers.guarded.headers); "
    )
    for secret in ("s3cret", "wrong-s3cret-value", "Bearer"):
        assert secret not in failure.message
        assert secret not in repr(failure)


def guarded_config(tmp_path: Path, url: str, **env: str) -> Config:
    """A configuration loaded from config.toml whose header value is `${GUARD_TOKEN}`."""
    workspace = tmp_path / "ws-env"
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text(
        f"[mcp_servers.guarded]\nurl = {json.dumps(url)}\n"
        'headers = { Authorization = "Bearer ${GUARD_TOKEN}" }\n'
    )
    return load_config(env={"HOME": str(tmp_path), **env}, cwd=workspace)


async def test_a_header_value_from_the_environment(
    guarded: McpHttpServer, server_dir: Path, tmp_path: Path
) -> None:
    secret = TOKEN.removeprefix("Bearer ")
    config = guarded_config(tmp_path, guarded.url, GUARD_TOKEN=secret)
    async with open_mcp_servers(
        config.mcp_servers.values(), env=config.env, cwd=server_dir
    ) as toolset:
        assert toolset.failures == ()
        echoed = await tool(toolset, "mcp__guarded__echo").run(
            {"text": "through"}, context(server_dir), None
        )
    assert echoed.output == b"through"

    unset = guarded_config(tmp_path, guarded.url)
    async with open_mcp_servers(unset.mcp_servers.values(), env=unset.env, cwd=server_dir) as none:
        assert none.tools == ()
        (failure,) = none.failures
    assert failure.message == "MCP server 'guarded' not started: GUARD_TOKEN is not set"

    wrong = guarded_config(tmp_path, guarded.url, GUARD_TOKEN="stale-t0ken")
    async with open_mcp_servers(wrong.mcp_servers.values(), env=wrong.env, cwd=server_dir) as bad:
        (refused,) = bad.failures
    assert refused.message.startswith("MCP server 'guarded' is unavailable: HTTP 401 Unauthorized")
    assert "stale-t0ken" not in refused.message
