"""`/compact` that would not make the view smaller: refused with its figures, recorded, and the
session goes on (idle, and queued during a turn)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from comal.ledger.store import Ledger
from comal.tui.widgets.reports import CheckpointList, HelpView
from comal.tui.widgets.transcript import NoticeItem
from tests.tui.conftest import AppFactory, compact_during_call, gated_turns, send, settle

pytestmark = pytest.mark.tui

FIGURES = re.compile(r"~([\d,]+) → ~([\d,]+) tokens")


def figures(text: str) -> tuple[int, int]:
    found = FIGURES.search(text)
    assert found is not None, text
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


async def test_idle_compact_on_a_short_session_is_refused_and_the_next_turn_works(
    make_app: AppFactory, ledger: Ledger
) -> None:
    app = make_app(["First answer.", "Second answer."])
    async with app.run_test(size=(100, 40)) as pilot:
        await send(pilot, app, "remember the number 7")
        await settle(pilot, app)
        assert app.session is not None
        sid = app.session.id
        recorded = [(e.id, e.kind, e.payload) for e in ledger.entries(sid)]
        await send(pilot, app, "/compact")
        await send(pilot, app, "/session checkpoints")
        await pilot.pause()
        refused = [n.text for n in app.query(NoticeItem) if "compaction refused" in n.text]
        listed = app.query_one(CheckpointList).found
        await send(pilot, app, "and now?")
        await settle(pilot, app)
        notices = [n.text for n in app.query(NoticeItem)]
    assert len(refused) == 1
    assert refused[0].startswith("◆ compaction refused: a checkpoint would not make the view")
    assert listed == []
    entries = ledger.entries(sid)
    assert [(e.id, e.kind, e.payload) for e in entries[: len(recorded)]] == recorded
    cancelled = ledger.entries(sid, kinds=("compact.cancelled",))
    assert len(cancelled) == 1
    assert cancelled[0].payload["reason"] == "not_smaller"
    before, after = figures(refused[0])
    assert (cancelled[0].payload["before_tokens"], cancelled[0].payload["after_tokens"]) == (
        before,
        after,
    )
    assert after >= before
    assert ledger.entries(sid, kinds=("checkpoint",)) == []
    # The next turn runs as usual, on the history as it was.
    answers = [e.payload["message"] for e in ledger.entries(sid, kinds=("message.assistant",))]
    assert "Second answer." in str(answers[-1])
    assert not any(n.startswith("✗") for n in notices)


async def test_queued_compact_that_would_not_shrink_is_dropped_at_the_boundary(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    app = make_app(gated_turns())
    async with app.run_test(size=(100, 40)) as pilot:
        sid = await compact_during_call(pilot, app)
        (workspace / "gate").touch()
        await settle(pilot, app)
        notices = [n.text for n in app.query(NoticeItem)]
    kinds = [e.kind for e in ledger.entries(sid)]
    assert "checkpoint" not in kinds
    # Judged before the second model call, after the gated call's receipt; said once.
    assert kinds.count("compact.cancelled") == 1
    last_request = len(kinds) - 1 - kinds[::-1].index("provider.request")
    assert kinds.index("tool.result") < kinds.index("compact.cancelled") < last_request
    refused = [n for n in notices if "COMPACT_NOT_SMALLER" in n]
    assert len(refused) == 1
    cancelled = ledger.entries(sid, kinds=("compact.cancelled",))[0]
    assert figures(refused[0]) == (
        cancelled.payload["before_tokens"],
        cancelled.payload["after_tokens"],
    )
    answers = ledger.entries(sid, kinds=("message.assistant",))
    assert "Finished." in str(answers[-1].payload["message"])
    assert app.session is not None
    assert app.session.engine.pending_compaction() is None


async def test_help_says_when_compact_is_refused(make_app: AppFactory) -> None:
    app = make_app([])
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "/help")
        await pilot.pause()
        rows = dict(app.query_one(HelpView).rows)
        screen = app.export_screenshot()
    assert "would not make the view smaller" in rows["/compact"]
    assert "refused" in screen
