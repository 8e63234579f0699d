"""A write race: a process swaps a folder of the path for a symlink to a folder outside the
workspace while Write and Edit calls go through the real tool runner (check, preparation,
`tool.started`, write). The runner refuses a path that resolves elsewhere after the check, and
the tools open every folder from the workspace's handle with O_NOFOLLOW, so a swap at any
moment is refused, never followed."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.agent.core.tool_runner import ToolRunner
from comal.agent.core.toolset import standard_tools
from comal.config import PermissionsConfig
from comal.ledger.records import Record
from comal.ledger.store import Ledger
from comal.messages import JSONObject, ToolCallPart
from comal.tools.base import ToolContext, ToolRegistry
from comal.tools.edits import EditTool, WriteTool
from comal.tools.permissions import PermissionPolicy

WRITES = 300


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(tmp_path / "ledger.db") as opened:
        yield opened


def runner(workspace: Path, ledger: Ledger) -> ToolRunner:
    session_id = ledger.create_session(cwd=str(workspace), model="m")
    permissions = PermissionPolicy(PermissionsConfig(mode="workspace-write"), workspace)
    context = ToolContext(workspace, permissions, dict(os.environ))

    def record(record: Record, body: bytes | None) -> None:
        ledger.append_record(session_id, record, body=body)

    return ToolRunner(ToolRegistry(standard_tools()), permissions, context, record)


_LIBC = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (`renameat2(RENAME_EXCHANGE)`): the path always exists."""
    if _LIBC.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def swap(folder: Path, target: Path) -> Path:
    """Put a symlink to `target` where `folder` is (the folder moves to `<name>.link`)."""
    link = folder.with_name(folder.name + ".link")
    link.symlink_to(target, target_is_directory=True)
    exchange(folder, link)
    return link


def outside_files(outside: Path) -> list[str]:
    return sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))


async def test_a_folder_swapped_after_the_preparation_is_refused_by_the_tools(
    workspace: Path, outside: Path
) -> None:
    permissions = PermissionPolicy(PermissionsConfig(mode="workspace-write"), workspace)
    ctx = ToolContext(workspace, permissions, dict(os.environ))
    (workspace / "d" / "e").mkdir(parents=True)
    (workspace / "d" / "e" / "f.txt").write_text("before\n")
    write_args: JSONObject = {"path": "d/e/new.txt", "content": "planted\n"}
    edit_args: JSONObject = {
        "path": "d/e/f.txt",
        "edits": [{"old_string": "before", "new_string": "after"}],
    }
    write, edit = WriteTool(), EditTool()
    write_prep = await write.prepare(write_args, ctx)
    edit_prep = await edit.prepare(edit_args, ctx)
    (outside / "e").mkdir()
    (outside / "e" / "f.txt").write_text("before\n")
    swap(workspace / "d", outside)
    outcomes = [await write.run(write_args, ctx, write_prep)]
    outcomes.append(await edit.run(edit_args, ctx, edit_prep))
    assert [(o.status, o.output.decode().split(" is ", 1)[1]) for o in outcomes] == [
        (
            "error",
            "no longer a plain folder (a symlink or a file took its place since the path "
            "was checked); nothing written",
        )
    ] * 2
    assert outside_files(outside) == ["e", "e/f.txt"]
    assert (outside / "e" / "f.txt").read_text() == "before\n"


async def test_writes_while_a_folder_is_swapped_in_a_loop_never_land_outside(
    workspace: Path, outside: Path, ledger: Ledger
) -> None:
    run = runner(workspace, ledger)
    folder = workspace / "d"
    folder.mkdir()
    link = swap(folder, outside)
    exchange(folder, link)  # the real folder back at `d`, the symlink beside it
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        while not stop.is_set():
            exchange(folder, link)
            exchange(folder, link)
            swaps += 1

    thread = threading.Thread(target=swapper)
    thread.start()
    receipts = []
    try:
        for n in range(WRITES):
            call = ToolCallPart(f"w{n}", "Write", {"path": f"d/f{n}.txt", "content": f"{n}\n"})
            receipts.append(await run.run(call))
    finally:
        stop.set()
        thread.join()
    assert swaps > 0
    assert outside_files(outside) == []
    written = sorted(p.name for p in (workspace / "d").iterdir())
    assert written == sorted(f"f{r.call_id[1:]}.txt" for r in receipts if r.status == "ok")
    # Every refusal is a clean error result, never an exception or a write elsewhere.
    refused = {r.status for r in receipts if r.status != "ok"}
    assert refused <= {"error", "denied"}
