"""The real npm MCP servers `@modelcontextprotocol/server-filesystem` and `server-everything`.

`.ci/run` installs them (pinned) into `~/.cache/comal-mcp-npm` with Debian's `npm`; another
directory can be named by `COMAL_MCP_NPM_DIR`. Without node or the packages these tests skip,
except under CI (`CI=true`), where a missing install is a failure: a suite CI skips is not a test.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from comal.config import McpServerConfig, PermissionsConfig, load_config
from comal.testing.fake_server import FakeServer
from comal.tools.base import ToolContext
from comal.tools.mcp import McpToolset, open_mcp_servers
from comal.tools.permissions import PermissionPolicy
from tests.e2e.headless_support import comal, configure, ledger_at, trust_project

pytestmark = pytest.mark.e2e

NPM_DIR = Path(os.environ.get("COMAL_MCP_NPM_DIR", Path.home() / ".cache" / "comal-mcp-npm"))
SCOPE = NPM_DIR / "node_modules" / "@modelcontextprotocol"
FILESYSTEM_JS = SCOPE / "server-filesystem" / "dist" / "index.js"
EVERYTHING_JS = SCOPE / "server-everything" / "dist" / "index.js"
NODE = shutil.which("node")
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg=="
)
PNG = base64.b64decode(PNG_B64)


def _require_npm_servers() -> str:
    missing = [str(p) for p in (FILESYSTEM_JS, EVERYTHING_JS) if not p.is_file()]
    if NODE is not None and not missing:
        return NODE
    why = "node is not installed" if NODE is None else f"not installed: {', '.join(missing)}"
    if os.environ.get("CI"):
        pytest.fail(f"the real MCP servers must run in CI ({why}); see .ci/run")
    pytest.skip(f"real npm MCP servers unavailable ({why}); .ci/run installs them")


@pytest.fixture
def node() -> str:
    return _require_npm_servers()


def everything(node: str) -> McpServerConfig:
    return McpServerConfig("everything", command=node, args=(str(EVERYTHING_JS), "stdio"))


def filesystem(node: str, root: Path, name: str = "fs") -> McpServerConfig:
    return McpServerConfig(name, command=node, args=(str(FILESYSTEM_JS), str(root)))


def by_name(toolset: McpToolset) -> dict[str, Any]:
    return {tool.spec.name: tool for tool in toolset.tools}


def context(workspace: Path) -> ToolContext:
    policy = PermissionPolicy(PermissionsConfig(), workspace)
    return ToolContext(workspace, policy, dict(os.environ))


async def test_everything_lists_its_tools_and_leaves_out_task_only_ones(
    node: str, tmp_path: Path
) -> None:
    async with open_mcp_servers(
        [everything(node)], env=os.environ, cwd=tmp_path, log_dir=tmp_path / "logs"
    ) as toolset:
        tools = by_name(toolset)
        assert toolset.failures == ()
        echo = await tools["mcp__everything__echo"].run({"message": "hi"}, context(tmp_path), None)
        total = await tools["mcp__everything__get-sum"].run(
            {"a": 2, "b": 3}, context(tmp_path), None
        )
        image = await tools["mcp__everything__get-tiny-image"].run({}, context(tmp_path), None)
    assert "mcp__everything__echo" in tools
    # server-everything marks this tool `execution.taskSupport: "required"`.
    assert "mcp__everything__simulate-research-query" not in tools
    (notice,) = toolset.notices
    assert "simulate-research-query" in notice.message
    assert "taskSupport" in notice.message
    assert echo.output == b"Echo: hi"
    assert not echo.is_error
    assert total.output == b"The sum of 2 and 3 is 5."
    assert [m.media_type for m in image.media] == ["image/png"]


async def test_everything_content_kinds_become_outcomes(node: str, tmp_path: Path) -> None:
    """Structured content, resource links, embedded binary resources and the environment a
    stdio server inherits, as a real server returns them (no call here leaves loopback)."""
    env = {**os.environ, "COMAL_TEST_SECRET": "s3cr3t-value"}
    async with open_mcp_servers(
        [everything(node)], env=env, cwd=tmp_path, log_dir=tmp_path / "logs"
    ) as toolset:
        tools = by_name(toolset)
        ctx = context(tmp_path)
        structured = await tools["mcp__everything__get-structured-content"].run(
            {"location": "Chicago"}, ctx, None
        )
        links = await tools["mcp__everything__get-resource-links"].run({"count": 2}, ctx, None)
        gzip = await tools["mcp__everything__gzip-file-as-resource"].run(
            {
                "name": "hello.gz",
                "data": "data:text/plain;base64,aGVsbG8gd29ybGQK",
                "outputType": "resource",
            },
            ctx,
            None,
        )
        seen_env = await tools["mcp__everything__get-env"].run({}, ctx, None)
    assert json.loads(structured.output) == json.loads(structured.output.decode())
    assert set(json.loads(structured.output)) == {"temperature", "conditions", "humidity"}
    assert links.output.decode().splitlines()[1:] == [
        "[resource link: demo://resource/dynamic/blob/1 Blob Resource 1]",
        "[resource link: demo://resource/dynamic/text/2 Text Resource 2]",
    ]
    assert gzip.output.decode().startswith(
        "[resource demo://resource/session/hello.gz (application/gzip): "
    )
    inherited = json.loads(seen_env.output)
    assert "COMAL_TEST_SECRET" not in inherited
    assert "s3cr3t-value" not in seen_env.output.decode()
    assert inherited["PATH"] == os.environ["PATH"]


async def test_filesystem_reads_and_writes_real_files(node: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (root / "pixel.png").write_bytes(PNG)
    async with open_mcp_servers(
        [filesystem(node, root)], env=os.environ, cwd=tmp_path, log_dir=tmp_path / "logs"
    ) as toolset:
        tools = by_name(toolset)
        ctx = context(tmp_path)
        media = await tools["mcp__fs__read_media_file"].run(
            {"path": str(root / "pixel.png")}, ctx, None
        )
        read = await tools["mcp__fs__read_text_file"].run(
            {"path": str(root / "notes.txt")}, ctx, None
        )
        wrote = await tools["mcp__fs__write_file"].run(
            {"path": str(root / "new.txt"), "content": "gamma\n"}, ctx, None
        )
        outside = await tools["mcp__fs__read_text_file"].run({"path": "/etc/hostname"}, ctx, None)
    assert toolset.failures == ()
    assert toolset.notices == ()
    assert read.output == b"alpha\nbeta\n"
    assert not wrote.is_error
    assert (root / "new.txt").read_text() == "gamma\n"
    assert [(m.media_type, m.data_b64) for m in media.media] == [("image/png", PNG_B64)]
    assert outside.is_error
    assert b"outside allowed directories" in outside.output.lower() or b"denied" in outside.output


def noisy(node: str, root: Path, lines: int) -> McpServerConfig:
    """The filesystem server behind a launcher that prints `lines` banner lines on stdout first
    (as wrappers like `npx` can): real stray stdout before the first MCP message."""
    script = (
        f'i=0; while [ "$i" -lt {lines} ]; do echo "starting up $i"; i=$((i+1)); done;'
        f" exec {shlex.quote(node)} {shlex.quote(str(FILESYSTEM_JS))} {shlex.quote(str(root))}"
    )
    return McpServerConfig("noisy", command="/bin/sh", args=("-c", script))


async def test_stray_stdout_goes_to_the_log_with_one_notice(
    node: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    logs = tmp_path / "logs"
    async with open_mcp_servers(
        [noisy(node, root, 2000)], env=os.environ, cwd=tmp_path, log_dir=logs
    ) as toolset:
        tools = by_name(toolset)
        listed = await tools["mcp__noisy__list_allowed_directories"].run(
            {}, context(tmp_path), None
        )
    captured = capfd.readouterr()
    assert captured.err == ""
    assert "Traceback" not in captured.out
    assert str(root) in listed.output.decode()
    (notice,) = toolset.notices
    assert "2000 stdout line(s)" in notice.message
    assert str(logs / "mcp-noisy.log") in notice.message
    log = (logs / "mcp-noisy.log").read_text()
    assert log.count("[comal: stdout line that is not MCP, ignored] starting up") == 2000
    assert "starting up 1999" in log


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def everything_sse(node: str, tmp_path: Path) -> Iterator[str]:
    """server-everything's SSE transport on a loopback port; yields its `/sse` URL."""
    port = free_port()
    log = (tmp_path / "everything-sse.log").open("w")
    proc = subprocess.Popen(
        [node, str(EVERYTHING_JS), "sse"],
        env={**os.environ, "PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, (tmp_path / "everything-sse.log").read_text()
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def write_mcp_json(workspace: Path, servers: dict[str, object]) -> None:
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2))


def test_mcp_json_servers_run_for_real_beside_toml(
    node: str, tmp_path: Path, everything_sse: str
) -> None:
    """`.mcp.json` (stdio and sse) is read beside TOML; the model calls both through `comal -p`;
    the stray banner of one server leaves Comal's stderr clean."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("from the workspace\n")
    home = tmp_path / "home"
    noisy_fs = noisy(node, workspace, 3)
    write_mcp_json(
        workspace,
        {
            "files": {"command": noisy_fs.command, "args": list(noisy_fs.args)},
            "demo": {"type": "sse", "url": everything_sse},
            "calc": {"command": "/no/such/server"},
        },
    )
    turns: list[Any] = [
        {
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "mcp__files__read_text_file",
                    "arguments": {"path": str(workspace / "notes.txt")},
                },
                {"id": "c2", "name": "mcp__demo__echo", "arguments": {"message": "over sse"}},
            ]
        },
        "Both worked.",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        # TOML wins on a name clash: `calc` is the SDK-written test server, not .mcp.json's.
        with (workspace / ".comal" / "config.toml").open("a") as fh:
            fh.write(
                f"\n[mcp_servers.calc]\ncommand = {json.dumps(sys.executable)}\n"
                'args = ["-m", "comal.testing.mcp_server"]\n'
            )
        config = load_config(env={"HOME": str(home)}, cwd=workspace)
        assert [(s.name, s.source) for s in config.mcp_servers.values()] == [
            ("calc", "config.toml"),
            ("demo", ".mcp.json"),
            ("files", ".mcp.json"),
        ]
        assert config.mcp_servers["demo"].transport == "sse"
        trust_project(workspace, home)
        run = comal(
            "-p", "read and echo", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr + run.stdout[-2000:]
        first: dict[str, Any] = dict(server.received[0].body)
        second: dict[str, Any] = dict(server.received[1].body)
        offered = [t["function"]["name"] for t in first["tools"]]
        tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert "Traceback" not in run.stderr
    assert "mcp__calc__add" in offered
    assert "mcp__demo__echo" in offered
    assert "mcp__demo__simulate-research-query" not in offered
    assert [m["content"] for m in tool_messages] == ["from the workspace\n", "Echo: over sse"]
    notices = [str(e["message"]) for e in run.events() if e["type"] == "notice"]
    assert any("'files' wrote 3 stdout line(s)" in n for n in notices)
    assert any("simulate-research-query" in n for n in notices)
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        warnings = [e.payload["code"] for e in ledger.entries(info.id, kinds=("warning",))]
    assert warnings.count("MCP_SERVER_NOTICE") == 2
