"""`/help` renders on first open (no resize needed); Esc cancels a `/compact` queued for the
turn boundary, as it drops queued messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.ledger.store import Ledger
from comal.tui.widgets.reports import HelpView
from comal.tui.widgets.transcript import NoticeItem
from tests.tui.conftest import AppFactory, compact_during_call, gated_turns, send, settle

pytestmark = pytest.mark.tui


async def test_help_renders_on_first_open(make_app: AppFactory) -> None:
    app = make_app([])
    async with app.run_test(size=(100, 40)) as pilot:
        await send(pilot, app, "/help")
        await pilot.pause()
        view = app.query_one(HelpView)
        height = view.size.height
        screen = app.export_screenshot()
    assert height >= 6
    for command in ("/context", "/state", "/compact", "/help", "/quit"):
        assert command in screen


async def test_escape_cancels_a_queued_compaction(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    app = make_app(gated_turns())
    async with app.run_test(size=(100, 40)) as pilot:
        sid = await compact_during_call(pilot, app)
        assert app.session is not None
        assert app.session.engine.pending_compaction() == "user"
        await pilot.press("escape")
        await settle(pilot, app)
        pending = app.session.engine.pending_compaction()
        notices = [n.text for n in app.query(NoticeItem)]
    kinds = [e.kind for e in ledger.entries(sid)]
    assert "compact.cancelled" in kinds
    assert "checkpoint" not in kinds
    assert pending is None
    assert "◆ queued compaction cancelled" in notices
