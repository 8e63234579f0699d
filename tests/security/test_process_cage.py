"""Processes that outlive their call, and signals to the host: sandboxed Bash runs in a PID
namespace of its own, so it cannot see or signal Comal or any host process, and nothing it
starts (`setsid … &` included) survives the call, or Comal; an unconfined call's leftovers are
ended too."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.config import PermissionsConfig, SandboxConfig
from comal.testing.fake_server import FakeServer
from comal.tools.base import ToolContext
from comal.tools.permissions import PermissionPolicy
from comal.tools.sandbox import session_sandbox
from comal.tools.shell import BashTool
from tests.e2e.headless_support import configure, start
from tests.sandbox_support import NEEDS_BUBBLEWRAP
from tests.security.support import attack, calls, processes_with

pytestmark = NEEDS_BUBBLEWRAP


def context(workspace: Path, mode: str) -> ToolContext:
    policy = PermissionPolicy(PermissionsConfig(mode=mode), workspace)
    box = session_sandbox(mode, workspace, SandboxConfig())
    return ToolContext(workspace, policy, dict(os.environ), sandbox=box)


def marker() -> str:
    """A sleep length no other process uses: how a leftover is found on the host."""
    return f"7{secrets.randbelow(10**6):06d}.{secrets.randbelow(10**6):06d}"


def gone_within(mark: str, seconds: float = 10.0) -> list[int]:
    """The processes with `mark` still alive after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    while (found := processes_with(mark)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


@pytest.fixture
def host_process() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("mode", ["workspace-write", "full-access"])
async def test_setsid_in_the_background_does_not_outlive_the_call(
    workspace: Path, mode: str
) -> None:
    mark = marker()
    quiet = "> /dev/null 2>&1 < /dev/null &"
    command = f"setsid sleep {mark} {quiet} nohup sleep {mark} {quiet} echo started"
    outcome = await BashTool().run({"command": command}, context(workspace, mode), None)
    assert outcome.output == b"started\n"
    assert processes_with(mark) == []


async def test_sandboxed_bash_cannot_see_or_signal_host_processes(
    workspace: Path, host_process: subprocess.Popen[bytes]
) -> None:
    ctx = context(workspace, "workspace-write")
    targets = (host_process.pid, os.getpid())
    command = "; ".join(f"kill -9 {pid} 2>/dev/null; echo $?" for pid in targets)
    outcome = await BashTool().run(
        {"command": f"{command}; ls /proc | grep -c '^[0-9]'"}, ctx, None
    )
    lines = outcome.output.decode().split()
    assert lines[:2] == ["1", "1"]  # no such process, inside the namespace
    assert int(lines[2]) <= 4  # bwrap's init, bash, ls, grep: nothing of the host
    assert host_process.poll() is None


def test_nothing_a_call_started_outlives_comal(tmp_path: Path) -> None:
    """Through the CLI: a run ends its leftovers with each call; a run killed (SIGKILL) in the
    middle of a call leaves nothing running either."""
    mark = marker()
    command = f"setsid sleep {mark} > /dev/null 2>&1 < /dev/null & echo started"
    finished = attack(tmp_path / "ws", tmp_path / "home", calls(("Bash", {"command": command})))
    assert finished.run.code == 0, finished.run.stderr
    assert finished.results[0]["output"] == "started\n"
    assert processes_with(mark) == []

    workspace, home = tmp_path / "ws2", tmp_path / "home2"
    workspace.mkdir()
    hold = f"setsid sleep {mark} > /dev/null 2>&1 < /dev/null & touch launched; sleep 120"
    with FakeServer(calls(("Bash", {"command": hold, "timeout_s": 300}))) as server:
        configure(workspace, server, "openai-chat")
        proc = start("-p", "go", cwd=workspace, env_home=home, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not (workspace / "launched").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert (workspace / "launched").exists()
            assert len(processes_with(mark)) == 1
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            proc.kill()
            proc.wait()
    assert gone_within(mark) == []


def test_the_probe_is_not_fooled_by_this_interpreter() -> None:
    """`processes_with` sees a live process (so the checks above can fail)."""
    mark = marker()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", mark])
    try:
        assert processes_with(mark) == [proc.pid]
    finally:
        proc.kill()
        proc.wait()
