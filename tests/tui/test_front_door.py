"""`comal "task"` opens the TUI with the task sent as the first message, and `comal --resume`
without an id shows the session picker."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.agent.core.toolset import standard_tools
from comal.config import load_config
from comal.ledger.store import Ledger
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.tui.app import ComalApp, SessionStart
from comal.tui.picker import SessionPicker
from comal.tui.widgets.transcript import AssistantItem, UserItem
from tests.tui.conftest import settle, until

pytestmark = pytest.mark.tui


async def test_the_first_message_is_sent_when_the_app_opens(
    workspace: Path, ledger: Ledger
) -> None:
    start = SessionStart(
        ledger,
        load_config(cwd=workspace),
        ScriptedProvider([ScriptedTurn(text="On it.")]),
        standard_tools(),
        first_message="fix the failing test",
    )
    app = ComalApp(start)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: bool(app.query(AssistantItem)))
        await settle(pilot, app)
        assert [item.text for item in app.query(UserItem)] == ["fix the failing test"]
        assert app.session is not None
        sid = app.session.id
    asks = ledger.entries(sid, kinds=("message.user",))
    assert len(asks) == 1


async def test_the_picker_returns_the_chosen_session() -> None:
    rows = [("sid-newer", "aaaa  1m  answered  newer"), ("sid-older", "bbbb  2h  failed  older")]
    picker = SessionPicker(rows, "/work/project")
    async with picker.run_test(size=(80, 12)) as pilot:
        await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
    assert picker.return_value == "sid-older"


async def test_esc_leaves_the_picker_without_a_choice() -> None:
    picker = SessionPicker([("sid-1", "one")], "/work/project")
    async with picker.run_test(size=(80, 12)) as pilot:
        await pilot.press("escape")
        await pilot.pause()
    assert picker.return_value is None
