"""Bash under bubblewrap: writes outside the workspace and network connections fail inside the
sandbox and work in `full-access`; cancelling still kills the whole command."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.config import PermissionsConfig, SandboxConfig
from comal.tools.base import ToolContext
from comal.tools.permissions import PermissionPolicy
from comal.tools.sandbox import Sandbox, probe, session_sandbox
from comal.tools.shell import BashTool
from tests.sandbox_support import NEEDS_BUBBLEWRAP

pytestmark = NEEDS_BUBBLEWRAP


def context(workspace: Path, mode: str, sandbox: SandboxConfig | None = None) -> ToolContext:
    policy = PermissionPolicy(PermissionsConfig(mode=mode), workspace)
    box = session_sandbox(mode, workspace, sandbox or SandboxConfig())
    return ToolContext(workspace, policy, dict(os.environ), sandbox=box)


async def bash(ctx: ToolContext, command: str) -> tuple[int | None, str]:
    outcome = await BashTool().run({"command": command}, ctx, None)
    return outcome.exit_code, outcome.output.decode("utf-8", "replace")


def test_probe_works_here() -> None:
    # CI installs bubblewrap (.ci/run); a machine where it cannot run would skip this file.
    assert probe() is None


async def test_write_outside_the_workspace_fails_only_in_the_sandbox(
    workspace: Path, outside: Path
) -> None:
    code, out = await bash(context(workspace, "workspace-write"), f"touch {outside}/x")
    assert code != 0
    assert "Read-only file system" in out
    assert not (outside / "x").exists()
    code, _ = await bash(context(workspace, "workspace-write"), "touch inside && touch /tmp/t")
    assert code == 0
    assert (workspace / "inside").exists()
    code, _ = await bash(context(workspace, "full-access"), f"touch {outside}/x")
    assert code == 0
    assert (outside / "x").exists()


async def test_configured_paths_are_writable_and_read_only_mode_protects_the_workspace(
    workspace: Path, outside: Path
) -> None:
    extra = SandboxConfig(writable=(str(outside),))
    code, _ = await bash(context(workspace, "workspace-write", extra), f"touch {outside}/y")
    assert code == 0
    assert (outside / "y").exists()
    code, out = await bash(context(workspace, "read-only"), "touch z")
    assert "Read-only file system" in out
    assert code != 0
    assert not (workspace / "z").exists()


def test_the_private_tmp_is_not_the_host_tmp(workspace: Path) -> None:
    marker = Path("/tmp") / f"comal-sandbox-{os.getpid()}"
    try:
        code, _ = asyncio.run(bash(context(workspace, "workspace-write"), f"touch {marker}"))
        assert code == 0
        assert not marker.exists()
    finally:
        marker.unlink(missing_ok=True)


@pytest.fixture
def server() -> Iterator[int]:
    """A loopback TCP server that answers `hello` to each connection."""
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    sock.close()
    thread.join(timeout=5)


CONNECT = "exec 3<>/dev/tcp/127.0.0.1/{port} && head -n1 <&3"


async def test_network_is_off_in_the_sandbox_unless_configured(
    workspace: Path, server: int
) -> None:
    code, out = await bash(context(workspace, "workspace-write"), CONNECT.format(port=server))
    assert code != 0
    assert "hello" not in out
    on = SandboxConfig(network=True)
    code, out = await bash(context(workspace, "workspace-write", on), CONNECT.format(port=server))
    assert (code, out.strip()) == (0, "hello")
    code, out = await bash(context(workspace, "full-access"), CONNECT.format(port=server))
    assert (code, out.strip()) == (0, "hello")


async def test_cancel_kills_the_command_inside_the_sandbox(workspace: Path) -> None:
    cancel = asyncio.Event()
    ctx = context(workspace, "workspace-write")
    ctx.cancel = cancel
    run = asyncio.create_task(BashTool().run({"command": "sleep 2; touch late"}, ctx, None))
    await asyncio.sleep(0.5)
    cancel.set()
    outcome = await run
    assert outcome.status == "error"
    await asyncio.sleep(2.5)
    assert not (workspace / "late").exists()


async def test_an_unavailable_sandbox_refuses_bash_when_required(workspace: Path) -> None:
    policy = PermissionPolicy(PermissionsConfig(), workspace)
    box = Sandbox(workspace, SandboxConfig(required=True), unavailable="bwrap is not installed")
    ctx = ToolContext(workspace, policy, dict(os.environ), sandbox=box)
    code, out = await bash(ctx, "touch refused")
    assert code is None
    assert "sandbox is unavailable: bwrap is not installed" in out
    assert not (workspace / "refused").exists()
    lenient = Sandbox(workspace, SandboxConfig(), unavailable="bwrap is not installed")
    ctx = ToolContext(workspace, policy, dict(os.environ), sandbox=lenient)
    code, _ = await bash(ctx, "touch ran")
    assert code == 0
    assert (workspace / "ran").exists()


def test_missing_bubblewrap_is_reported() -> None:
    assert probe("comal-no-such-bwrap") == "comal-no-such-bwrap (bubblewrap) is not installed"


async def test_the_workspace_settings_stay_read_only_inside(workspace: Path) -> None:
    (workspace / ".comal").mkdir()
    code, out = await bash(context(workspace, "workspace-write"), "echo x > .comal/config.toml")
    assert code != 0
    assert "Read-only file system" in out
    assert not (workspace / ".comal" / "config.toml").exists()


async def test_a_place_holder_stays_while_another_call_still_runs(workspace: Path) -> None:
    """Two calls at once: the first to end leaves the places held for the other."""
    ctx = context(workspace, "workspace-write")
    waiting = "until [ -e b-done ]; do sleep 0.05; done; printf x > AGENTS.md; echo $?"
    first = asyncio.create_task(bash(ctx, waiting))
    while not (workspace / "AGENTS.md").is_dir():  # noqa: ASYNC110 - a folder has no event
        await asyncio.sleep(0.05)
    code, _ = await bash(ctx, "true")
    assert code == 0
    assert (workspace / "AGENTS.md").is_dir()  # still held: the first call runs on
    (workspace / "b-done").touch()
    code, out = await first
    assert (code, out.splitlines()[-1]) == (0, "1")
    assert names(workspace) == ["b-done"]


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())
