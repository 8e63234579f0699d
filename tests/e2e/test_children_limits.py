"""What bounds a child session: its tool subset, the coordinator's permissions, and how many
children run at once (`[agents] max_parallel`), against the fake server scripting both."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from comal.agent.children.run import DELEGATION_TOOLS, RECEIPT_KIND, child_session_id
from comal.ledger import Ledger
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal, configure, ledger_at, start

pytestmark = pytest.mark.e2e

WRITING_TOOLS = {"Write", "Edit", "Bash"}


def task(call_id: str, marker: str, **extra: Any) -> dict[str, Any]:
    arguments = {"description": f"look {marker}", "prompt": f"{marker} do the task"}
    return {"id": call_id, "name": "Task", "arguments": arguments | extra}


def offered(body: Any) -> set[str]:
    """Tool names a request offers (Anthropic Messages shape)."""
    return {str(tool["name"]) for tool in body.get("tools", [])}


def parent_result(home: Path, call_id: str) -> tuple[Any, str]:
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        result = next(
            e
            for e in ledger.entries(parent_id, kinds=("tool.result",))
            if e.payload["call_id"] == call_id
        )
        return result.payload, (ledger.body(result) or b"").decode()


def test_a_child_gets_the_read_only_tools_by_default_and_never_a_tool_its_coordinator_lacks(
    workspace: Path, home: Path
) -> None:
    parent: list[Any] = [
        {"tool_calls": [task("t1", "[plain]")]},
        {"tool_calls": [task("t2", "[greedy]", tools=["Read", "Teleport"])]},
        "Done.",
    ]
    agents: dict[str, list[Any]] = {"[plain]": ["looked"], "[greedy]": ["never asked"]}
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, "anthropic-messages")
        run = comal("-p", "delegate", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert server.stats().remaining_turns == 1  # the refused child never made a request
        coordinator = offered(server.received[0].body)
        (child_request,) = [r.body for r in server.received if "[plain]" in _first_user(r.body)]
    child_tools = offered(child_request)
    assert coordinator >= WRITING_TOOLS
    assert "Read" in child_tools
    assert child_tools < coordinator | {"EvidenceRead"}
    assert not child_tools & WRITING_TOOLS
    assert not child_tools & {*DELEGATION_TOOLS, "Board", "finish_call"}
    payload, text = parent_result(home, "t2")
    assert payload["is_error"] is True
    assert "a child cannot be given Teleport" in text
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        assert ledger.children(parent_id) == [child_session_id(parent_id, "t1")]


def _first_user(body: Any) -> str:
    for message in body.get("messages", []):
        if message.get("role") == "user":
            return json.dumps(message)
    return ""


def test_the_coordinators_permissions_are_the_childs_ceiling(workspace: Path, home: Path) -> None:
    write = {"path": "out.txt", "content": "written by the child\n"}
    parent: list[Any] = [{"tool_calls": [task("w1", "[writer]", tools=["Write"])]}, "Done."]
    agents: dict[str, list[Any]] = {
        "[writer]": [
            {"tool_calls": [{"id": "cw", "name": "Write", "arguments": write}]},
            "I tried to write out.txt.",
        ]
    }
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, "anthropic-messages")
        run = comal(
            "-p", "delegate a write", "--permission-mode", "read-only", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr
        assert server.stats().orphan_violations == 0
    assert not (workspace / "out.txt").exists()
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        child = child_session_id(parent_id, "w1")
        (started,) = [
            e
            for e in ledger.entries(child, kinds=("tool.started",))
            if e.payload["call_id"] == "cw"
        ]
        permission: Any = started.payload["permission"]
        assert permission["decision"] == "deny"
        (result,) = [
            e for e in ledger.entries(child, kinds=("tool.result",)) if e.payload["call_id"] == "cw"
        ]
        assert result.payload["status"] == "denied"
        (receipt,) = ledger.entries(child, kinds=(RECEIPT_KIND,))
        assert receipt.payload["answer"] == "I tried to write out.txt."


@pytest.mark.parametrize("limit", [1, 2])
def test_parallel_children_never_exceed_max_parallel(
    limit: int, workspace: Path, home: Path
) -> None:
    slow = {"delay_s": 0.02, "chunk_chars": 4}
    markers = [f"[kid-{n}]" for n in range(1, 5)]
    parent: list[Any] = [
        {"tool_calls": [task(f"p{n}", m) for n, m in enumerate(markers, start=1)]},
        "All answered.",
    ]
    agents: dict[str, list[Any]] = {m: [{"text": f"{m} answered", **slow}] for m in markers}
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, "openai-chat")
        config = workspace / ".comal" / "config.toml"
        config.write_text(config.read_text() + f"\n[agents]\nmax_parallel = {limit}\n")
        run = comal(
            "-p", "four looks", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr
        assert server.stats().remaining_turns == 0
    running = peak = 0
    for event in run.events():
        if event.get("type") == "child_started":
            running += 1
            peak = max(peak, running)
        elif event.get("type") == "child_finished":
            running -= 1
    assert peak == limit
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        assert len(ledger.children(parent_id)) == len(markers)


def test_parallel_children_each_hold_their_own_lock_while_they_run(
    workspace: Path, home: Path
) -> None:
    slow = {"delay_s": 0.1, "chunk_chars": 2}
    markers = ("[lock-a]", "[lock-b]")
    parent: list[Any] = [
        {"tool_calls": [task(f"l{n}", m) for n, m in enumerate(markers)]},
        "Both answered.",
    ]
    agents: dict[str, list[Any]] = {m: [{"text": f"{m} answered slowly", **slow}] for m in markers}
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, "openai-responses")
        proc = start("-p", "two slow looks", cwd=workspace, env_home=home)
        holders: dict[str, int] = {}
        try:
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline and len(holders) < 2:
                if (home / "ledger.db").exists():
                    with Ledger.open(home / "ledger.db") as ledger:
                        for info in ledger.sessions():
                            asked = ledger.entries(info.id, kinds=("provider.request",))
                            lock = ledger.lock_holder(info.id)
                            if info.parent_id is not None and asked and lock is not None:
                                holders[info.id] = lock.pid
                time.sleep(0.02)
        finally:
            _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    # Each child held a lock of its own while it ran, taken by the coordinator's process.
    assert len(holders) == 2
    assert set(holders.values()) == {proc.pid}
    with ledger_at(home) as ledger:
        for child in holders:
            assert ledger.lock_holder(child) is None  # released when the child finished
            assert ledger.entries(child, kinds=(RECEIPT_KIND,))
