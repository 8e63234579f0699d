"""Slash commands on a live session: /context rows, /compact appending a checkpoint (now, or at
the turn boundary), /session checkpoints [N], /state and /help."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.ledger.store import Ledger
from comal.tui.widgets.reports import (
    CheckpointList,
    ContextView,
    HelpView,
    ReportTable,
    TextReport,
)
from comal.tui.widgets.transcript import NoticeItem
from tests.tui.conftest import (
    AppFactory,
    command_after_a_turn,
    compact_during_call,
    gated_turns,
    reading_turns,
    send,
    session_id,
    settle,
)

pytestmark = pytest.mark.tui

ROW_NAMES = [
    "System prompt",
    "Custom instructions",
    "Native tools",
    "Plugin tools",
    "MCP tools",
    "Media",
    "Checkpoint",
    "Conversation",
    "Free space",
    "Buffer (output reserve + margin)",
]


async def test_context_shows_the_report_rows(make_app: AppFactory) -> None:
    app = make_app(["ok"])
    async with app.run_test(size=(100, 40)) as pilot:
        await command_after_a_turn(pilot, app, "/context")
        view = app.query_one(ContextView)
        table = view.query_one("#context-table", ReportTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert app.session is not None
        expected = app.session.engine.report()
    assert names == ROW_NAMES
    assert view.report == expected
    assert expected.window_tokens == 45_000


async def test_commands_before_any_session_say_so(make_app: AppFactory, ledger: Ledger) -> None:
    app = make_app([])
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, app, "/context")
        await send(pilot, app, "/help")
        await send(pilot, app, "/contxt")
        await pilot.pause()
        notices = [n.text for n in app.query(NoticeItem)]
        helps = list(app.query(HelpView))
    assert "no session yet: send a task first" in notices
    assert any("unknown command '/contxt'" in n for n in notices)
    assert len(helps) == 1
    assert ledger.sessions() == []


async def test_compact_appends_a_checkpoint_and_lists_it(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    app = make_app([*reading_turns(workspace), "First answer."])
    async with app.run_test(size=(100, 40)) as pilot:
        await send(pilot, app, "remember the number 7")
        await settle(pilot, app)
        await send(pilot, app, "/compact")
        await send(pilot, app, "/session checkpoints")
        await send(pilot, app, "/session checkpoints 1")
        await send(pilot, app, "/session checkpoints 9")
        await pilot.pause()
        listing = app.query_one(CheckpointList)
        shown = [r for r in app.query(TextReport) if r.body]
        notices = [n.text for n in app.query(NoticeItem)]
        sid = session_id(app)
    checkpoints = ledger.entries(sid, kinds=("checkpoint",))
    assert [(c.payload["number"], c.payload["by"]) for c in checkpoints] == [(1, "user")]
    assert [c.number for c in listing.found] == [1]
    assert [r.body for r in shown] == [checkpoints[0].payload["text"]]
    assert "remember the number 7" in shown[0].body
    assert any(n.startswith("◆ checkpoint #1") for n in notices)
    assert "✗ no checkpoint 9 (1 recorded)" in notices


async def test_compact_during_a_turn_waits_for_the_boundary(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    app = make_app([*reading_turns(workspace), "Read them.", *gated_turns()])
    async with app.run_test(size=(100, 40)) as pilot:
        # Earlier work a checkpoint replaces, so the compaction makes the view smaller.
        await send(pilot, app, "read the parts")
        await settle(pilot, app)
        sid = await compact_during_call(pilot, app)
        assert ledger.entries(sid, kinds=("checkpoint",)) == []
        (workspace / "gate").touch()
        await settle(pilot, app)
    kinds = [e.kind for e in ledger.entries(sid)]
    # Derived before the second model call, i.e. after the tool's receipt, never mid-call.
    assert kinds.count("checkpoint") == 1
    # After every receipt, the gated call's (the last) included.
    assert len(kinds) - 1 - kinds[::-1].index("tool.result") < kinds.index("checkpoint")
    assert kinds.index("checkpoint") < len(kinds) - 1 - kinds[::-1].index("provider.request")


async def test_state_shows_the_session_view(make_app: AppFactory) -> None:
    app = make_app(["ok"])
    async with app.run_test(size=(100, 40)) as pilot:
        await command_after_a_turn(pilot, app, "/state")
        report = app.query_one(TextReport)
        sid = session_id(app)
    assert report.body.startswith(f"session {sid} · active")
    assert "pending calls: 0" in report.body
    assert "evidence: 0 stored outputs" in report.body
