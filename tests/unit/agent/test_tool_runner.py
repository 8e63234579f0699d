"""`ToolRunner` on its own: real tools in a real workspace, receipts appended to a real ledger.

Every call gets `tool.started` before anything runs and exactly one `tool.result`, whether it
ran, was refused by the permission policy, named no known tool, had arguments that did not
parse or did not fit the schema, or re-issued an uncertain call.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from comal.agent.core.tool_runner import REPEAT_MODE, ToolRunner
from comal.agent.core.toolset import standard_tools
from comal.config import PermissionsConfig
from comal.ledger.entry import Entry
from comal.ledger.records import Record
from comal.ledger.store import Ledger
from comal.messages import InvalidArguments, JSONObject, ToolCallPart, digest_bytes
from comal.tools.base import ToolContext, ToolRegistry
from comal.tools.permissions import AskHook, PermissionPolicy

RAN: JSONObject = {"command": "echo ran > ran.txt"}


@dataclass
class Rig:
    workspace: Path
    ledger: Ledger
    session_id: str

    def runner(
        self,
        mode: str = "workspace-write",
        *,
        interactive: bool = False,
        ask: AskHook | None = None,
    ) -> ToolRunner:
        permissions = PermissionPolicy(PermissionsConfig(mode=mode), self.workspace, ask=ask)
        context = ToolContext(
            self.workspace, permissions, dict(os.environ), interactive=interactive
        )

        def record(record: Record, body: bytes | None) -> None:
            self.ledger.append_record(self.session_id, record, body=body)

        return ToolRunner(ToolRegistry(standard_tools()), permissions, context, record, confirm=ask)

    def receipts(self) -> list[Entry]:
        return self.ledger.entries(self.session_id, kinds=("tool.started", "tool.result"))

    @staticmethod
    def permission(started: Entry) -> JSONObject:
        decision = started.payload["permission"]
        assert isinstance(decision, dict)
        return decision

    def output(self, entry: Entry) -> str:
        body = self.ledger.body(entry)
        assert body is not None
        return body.decode()


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    workspace = (tmp_path / "ws").resolve()
    workspace.mkdir()
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        yield Rig(workspace, ledger, ledger.create_session(cwd=str(workspace), model="m"))


async def test_a_write_is_prepared_and_started_before_it_runs(rig: Rig) -> None:
    receipt = await rig.runner().run(
        ToolCallPart("c1", "Write", {"path": "out.txt", "content": "hello\n"})
    )
    started, result = rig.receipts()
    assert started.kind == "tool.started"
    assert (rig.permission(started)["decision"], rig.permission(started)["mode"]) == (
        "allow",
        "workspace-write",
    )
    preparation = started.payload["preparation"]
    assert isinstance(preparation, dict)
    # Recorded before the effect: the file did not exist, and what it will hold is known.
    assert (preparation["path"], preparation["digest_before"]) == ("out.txt", None)
    assert preparation["digest_intended"] == digest_bytes(b"hello\n")
    assert (rig.workspace / "out.txt").read_text() == "hello\n"
    assert (result.payload["status"], result.payload["is_error"]) == ("ok", False)
    assert result.payload["digest"] == digest_bytes(rig.output(result).encode())
    assert (receipt.call_id, receipt.name, receipt.status) == ("c1", "Write", "ok")


async def test_an_unknown_tool_gets_an_error_result_naming_the_tools(rig: Rig) -> None:
    receipt = await rig.runner().run(ToolCallPart("c1", "Deploy", {}))
    started, result = rig.receipts()
    assert rig.permission(started)["mode"] == "validation"
    assert rig.output(result).startswith("unknown tool 'Deploy'; available: Read, Write")
    assert (receipt.status, result.payload["is_error"]) == ("error", True)


async def test_a_call_whose_arguments_did_not_parse_never_runs(rig: Rig) -> None:
    bad = InvalidArguments('{"command": "echo ran > ran.txt"', "Expecting ',' delimiter")
    await rig.runner().run(ToolCallPart("c1", "Bash", {}, bad))
    started, result = rig.receipts()
    assert started.payload["arguments"] == {}
    assert rig.permission(started)["decision"] == "deny"
    expected = "arguments were not valid JSON: Expecting ',' delimiter"
    assert rig.output(result) == expected
    assert not (rig.workspace / "ran.txt").exists()


async def test_arguments_outside_the_schema_get_an_error_result(rig: Rig) -> None:
    await rig.runner().run(ToolCallPart("c1", "Read", {"offset": 2}))
    _, result = rig.receipts()
    assert "invalid arguments for Read" in rig.output(result)
    assert result.payload["status"] == "error"


async def test_a_denied_call_is_recorded_with_the_policys_reason_and_does_nothing(
    rig: Rig,
) -> None:
    receipt = await rig.runner("read-only").run(
        ToolCallPart("c1", "Write", {"path": "out.txt", "content": "x"})
    )
    started, result = rig.receipts()
    assert rig.permission(started)["decision"] == "deny"
    assert "preparation" not in started.payload
    assert rig.output(result).startswith("permission denied: ")
    assert (receipt.status, result.payload["status"]) == ("denied", "denied")
    assert not (rig.workspace / "out.txt").exists()


async def test_a_failing_tool_gets_its_error_as_the_result(rig: Rig) -> None:
    await rig.runner().run(ToolCallPart("c1", "Read", {"path": "missing.txt"}))
    _, result = rig.receipts()
    assert rig.output(result) == "missing.txt: no such file"
    assert (result.payload["status"], result.payload["is_error"]) == ("error", True)


async def test_headless_an_uncertain_call_is_not_repeated(rig: Rig) -> None:
    runner = rig.runner()
    runner.hold_uncertain("Bash", RAN, "evt_uncertain")
    receipt = await runner.run(ToolCallPart("c1", "Bash", RAN))
    started, result = rig.receipts()
    assert rig.permission(started)["mode"] == REPEAT_MODE
    assert "evt_uncertain" in rig.output(result)
    assert receipt.status == "denied"
    assert not (rig.workspace / "ran.txt").exists()
    assert runner.held_uncertain == 1


async def test_a_read_only_tool_is_repeated_even_when_uncertain(rig: Rig) -> None:
    runner = rig.runner()
    runner.hold_uncertain("Glob", {"pattern": "*"}, "evt_uncertain")
    receipt = await runner.run(ToolCallPart("c1", "Glob", {"pattern": "*"}))
    assert receipt.status == "ok"


async def test_interactively_a_confirmed_repeat_runs_once_and_is_released(rig: Rig) -> None:
    asked: list[tuple[str, str]] = []

    async def confirm(name: str, arguments: JSONObject, reason: str) -> bool:
        asked.append((name, reason))
        return True

    runner = rig.runner(interactive=True, ask=confirm)
    runner.hold_uncertain("Bash", RAN, "evt_uncertain")
    receipt = await runner.run(ToolCallPart("c1", "Bash", RAN))
    assert [name for name, _ in asked] == ["Bash"]
    assert "evt_uncertain" in asked[0][1]
    assert receipt.status == "ok"
    assert (rig.workspace / "ran.txt").read_text() == "ran\n"
    assert runner.held_uncertain == 0
    # Once confirmed, the call goes through the permission policy like any other.
    started, _ = rig.receipts()
    assert rig.permission(started)["decision"] == "allow"
