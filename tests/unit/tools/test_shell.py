"""Bash with real subprocesses: exact output, exit codes, timeouts, cancel, group kill."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from comal.tools.base import ToolContext, render_outcome
from comal.tools.shell import BashTool
from tests.unit.tools.conftest import MakeContext


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a killed orphan may await reaping)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def wait_gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


async def test_combined_output_and_exit_code(workspace: Path, ctx: ToolContext) -> None:
    outcome = await BashTool().run({"command": "echo out; echo err >&2; pwd; exit 3"}, ctx, None)
    assert outcome.output == f"out\nerr\n{workspace}\n".encode()
    assert outcome.exit_code == 3
    assert outcome.status == "ok"
    assert not outcome.is_error
    assert render_outcome(outcome).endswith("[exit code: 3]")


async def test_binary_and_invalid_utf8_output_is_byte_exact(ctx: ToolContext) -> None:
    raw = bytes(range(256)) + b"\xff\xfe\xc3(\x00tail"
    command = "printf '" + "".join(f"\\{b:03o}" for b in raw) + "'"
    outcome = await BashTool().run({"command": command}, ctx, None)
    assert outcome.output == raw
    assert outcome.exit_code == 0
    assert render_outcome(outcome).startswith("[output is not valid UTF-8")


async def test_timeout_kills_the_whole_process_group(ctx: ToolContext) -> None:
    command = "sleep 300 & echo $!; sleep 300"
    outcome = await BashTool().run({"command": command, "timeout_s": 1}, ctx, None)
    assert outcome.is_error
    assert outcome.status == "error"
    assert outcome.exit_code is None
    first, note = outcome.output.decode().splitlines()
    assert note == "[timed out after 1s; process group killed]"
    assert wait_gone(int(first)), "the background sleep survived the timeout"


async def test_cancel_event_kills_the_group(make_ctx: MakeContext) -> None:
    cancel = asyncio.Event()
    ctx = make_ctx(cancel=cancel)
    task = asyncio.create_task(BashTool().run({"command": "echo $$; sleep 300"}, ctx, None))
    await asyncio.sleep(0.3)
    cancel.set()
    outcome = await asyncio.wait_for(task, 5)
    assert outcome.is_error
    pid_line, note = outcome.output.decode().splitlines()
    assert note == "[cancelled; process group killed]"
    assert wait_gone(int(pid_line))


async def test_task_cancellation_kills_the_group(ctx: ToolContext, workspace: Path) -> None:
    pid_file = workspace / "pid"
    task = asyncio.create_task(
        BashTool().run({"command": f"sleep 300 & echo $! > {pid_file}; wait"}, ctx, None)
    )
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert wait_gone(int(pid_file.read_text()))


async def test_background_holder_of_the_pipe_is_ended(ctx: ToolContext) -> None:
    outcome = await BashTool(background_grace_s=0.2).run(
        {"command": "sleep 300 & echo $!"}, ctx, None
    )
    lines = outcome.output.decode().splitlines()
    assert outcome.exit_code == 0
    assert lines[1].startswith("[background processes still held the output open")
    assert wait_gone(int(lines[0]))


async def test_a_redirected_background_process_ends_with_the_call(ctx: ToolContext) -> None:
    outcome = await BashTool().run({"command": "sleep 5 > /dev/null 2>&1 & echo $!"}, ctx, None)
    pid = int(outcome.output.decode().strip())
    assert outcome.output == f"{pid}\n".encode()
    try:
        assert not alive(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_a_process_in_a_new_session_ends_with_the_unconfined_call(
    ctx: ToolContext,
) -> None:
    """`setsid` leaves the call's group and session; the call's mark still finds it."""
    command = "setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $!"
    outcome = await BashTool().run({"command": command}, ctx, None)
    pid = int(outcome.output.decode().strip())
    try:
        assert not alive(pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_output_cap_keeps_a_prefix_and_says_so(ctx: ToolContext) -> None:
    outcome = await BashTool(output_limit_bytes=1000).run(
        {"command": "head -c 5000 /dev/zero | tr '\\0' 'a'"}, ctx, None
    )
    assert outcome.output.startswith(b"a" * 1000)
    assert outcome.output[1000:] == (
        b"\n[output cut at the 1,000-byte limit: kept the first 1,000 of 5,000 bytes;"
        b" the rest was not recorded]\n"
    )
    assert outcome.exit_code == 0
    assert outcome.cut is not None
    assert (outcome.cut.limit_bytes, outcome.cut.total_bytes) == (1000, 5000)


async def test_environment_comes_from_the_context(workspace: Path, ctx: ToolContext) -> None:
    custom = ToolContext(workspace, ctx.permissions, {"PATH": "/usr/bin:/bin", "ONLY": "me"})
    outcome = await BashTool().run({"command": "echo $ONLY; echo ${HOME:-unset}"}, custom, None)
    assert outcome.output == b"me\nunset\n"


async def test_bad_timeout_is_an_error(ctx: ToolContext) -> None:
    outcome = await BashTool().run({"command": "true", "timeout_s": -1}, ctx, None)
    assert outcome.is_error
    assert b"timeout_s" in outcome.output
