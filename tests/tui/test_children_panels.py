"""Child sessions in the TUI: a collapsible panel per child with its own context meter, and Esc
stops the running children together with the turn."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from comal.agent.children.run import child_session_id
from comal.ledger.store import Ledger
from comal.messages import JSONValue, ToolCallPart
from comal.providers.scripted import ScriptedTurn
from comal.tui.widgets.children import ChildPanel
from comal.tui.widgets.reports import ContextView
from tests.tui.conftest import AppFactory, send, settle, until

pytestmark = pytest.mark.tui


def task(call_id: str, prompt: str, **extra: JSONValue) -> ToolCallPart:
    return ToolCallPart(call_id, "Task", {"description": "look around", "prompt": prompt, **extra})


async def test_a_child_runs_in_a_collapsible_panel_with_its_own_meter(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    read = ToolCallPart("r1", "Read", {"path": "a.txt"})
    app = make_app(
        [
            ScriptedTurn(tool_calls=(task("t1", "read a.txt"),)),
            ScriptedTurn(tool_calls=(read,)),
            "a.txt says alpha",
            "The child read it.",
        ]
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "delegate a look")
        await settle(pilot, app)
        assert app.session is not None
        (panel,) = app.query(ChildPanel)
        child = child_session_id(app.session.id, "t1")
        assert panel.session_id == child
        assert panel.collapsed  # folded once its receipt is recorded
        assert panel.status == "finished"
        assert panel.used_tokens is not None
        assert f"ctx ~{panel.used_tokens:,} / {panel.window_tokens:,}" in str(panel.title)
        assert panel.lines == ["→ Read a.txt", "← Read ok"]
        panel.collapsed = False
        await pilot.pause()
        assert not panel.collapsed
        # `/context` says what the child's receipt costs the coordinator's window.
        await send(pilot, app, "/context")
        await pilot.pause()
        view = app.query_one(ContextView)
        shown = "\n".join(str(s.content) for s in view.query(Static))
    assert ledger.session(child).status == "finished"
    assert view.report.child_receipts == 1
    assert view.report.child_receipt_tokens > 0
    assert f"Child receipts: 1 in view, ~{view.report.child_receipt_tokens:,} tokens" in shown


async def test_escape_cancels_the_running_children_with_the_turn(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    slow = ToolCallPart("s1", "Bash", {"command": "echo $$ > pid; sleep 60"})
    app = make_app(
        [
            ScriptedTurn(tool_calls=(task("t1", "wait", tools=["Bash"]),)),
            ScriptedTurn(tool_calls=(slow,)),
            "never reached",
        ]
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "delegate a wait")
        await until(pilot, lambda: (workspace / "pid").exists())
        await pilot.press("escape")
        await settle(pilot, app)
        assert app.session is not None
        child = child_session_id(app.session.id, "t1")
        (panel,) = app.query(ChildPanel)
        assert panel.lines[0].startswith("→ Bash echo")
    assert ledger.session(child).status == "interrupted"
    results = ledger.entries(child, kinds=("tool.result",))
    assert b"[cancelled; process group killed]" in (ledger.body(results[0]) or b"")
    assert ledger.verify(child).ok
