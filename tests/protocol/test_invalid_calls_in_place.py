"""A call whose arguments do not parse stays where the model made it, typed, and is never run.

Real adapters of every wire against the loopback fake server, a real ledger and the real loop:
the model calls Read, then Bash with broken arguments, then Glob. The ledger keeps the three
calls in stream order with the broken one marked `invalid`; each gets exactly one result, in
that order; the broken one an error result, without running; and the next request carries the
calls and results in the same order, the broken call with empty arguments.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2
import pytest

from comal.agent.core.loop import run_turn
from comal.agent.core.session import SessionOptions, open_session
from comal.agent.core.toolset import standard_tools
from comal.config import Config
from comal.ledger.store import Ledger
from comal.messages import InvalidArguments, ToolCallPart, message_from_json
from comal.testing.fake_server import FakeServer
from tests.protocol.wiring import WIRES, provider_for

BROKEN = '{"command": "touch ran.txt"'
TURNS: list[Any] = [
    {
        "text": "Looking around.",
        "tool_calls": [
            {"id": "c1", "name": "Read", "arguments": {"path": "notes.txt"}},
            {"id": "c2", "name": "Bash", "raw_arguments": BROKEN},
            {"id": "c3", "name": "Glob", "arguments": {"pattern": "*.txt"}},
        ],
    },
    "Done.",
]


def _config(workspace: Path, home: Path) -> Config:
    return Config(home=home, config_dir=home / "config", workspace=workspace, env=dict(os.environ))


def _call_ids(items: Sequence[object]) -> list[str]:
    """Call ids of the calls and results in a request's items, in order, on any wire."""
    out: list[str] = []
    for item in items:
        assert isinstance(item, dict)
        if item.get("type") in ("function_call", "function_call_output"):
            out.append(str(item["call_id"]))
        elif item.get("type") in ("tool_use", "tool_result"):
            out.append(str(item.get("id") or item.get("tool_use_id")))
        for call in item.get("tool_calls") or []:
            out.append(str(call["id"]))
        if item.get("role") == "tool":
            out.append(str(item["tool_call_id"]))
        content = item.get("content")
        if isinstance(content, list):
            out.extend(_call_ids(content))
    return out


@pytest.mark.parametrize("wire", WIRES)
async def test_an_invalid_call_keeps_its_place_and_gets_an_error_result(
    wire: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("a note\n")
    with FakeServer(TURNS) as server, Ledger.open(tmp_path / "ledger.db") as ledger:
        async with httpx2.AsyncClient() as client:
            session = open_session(
                ledger,
                _config(workspace, tmp_path / "home"),
                provider_for(server, wire, client),
                standard_tools(),
                SessionOptions(max_turns=3),
                workspace=workspace,
            )
            assert await run_turn(session, "what is here?") == "Done."
        second = server.received[1].body
        (reply, _) = ledger.entries(session.id, kinds=("message.assistant",))
        results = ledger.entries(session.id, kinds=("tool.result",))
        started = ledger.entries(session.id, kinds=("tool.started",))
    recorded = reply.payload["message"]
    assert isinstance(recorded, dict)
    calls = message_from_json(recorded).tool_calls
    assert [c.call_id for c in calls] == ["c1", "c2", "c3"]
    invalid = calls[1].invalid
    assert isinstance(invalid, InvalidArguments)
    assert (invalid.raw_arguments, "not valid JSON" in invalid.error) == (BROKEN, True)
    assert calls[1] == ToolCallPart("c2", "Bash", {}, invalid)
    assert [c.invalid for c in (calls[0], calls[2])] == [None, None]
    assert [r.payload["call_id"] for r in results] == ["c1", "c2", "c3"]
    assert [r.payload["is_error"] for r in results] == [False, True, False]
    assert started[1].payload["arguments"] == {}
    assert started[1].payload["permission"] == {
        "decision": "deny",
        "mode": "validation",
        "reason": f"arguments were not valid JSON: {invalid.error}",
    }
    assert not (workspace / "ran.txt").exists()
    items = second.get("messages") or second.get("input")
    assert isinstance(items, list)
    assert _call_ids(items) == ["c1", "c2", "c3", "c1", "c2", "c3"]
