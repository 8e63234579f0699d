"""`/rewind` in the TUI: the picker lists turns with the files they changed, and a pick restores."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.messages import ToolCallPart
from comal.providers.scripted import ScriptedTurn
from comal.tui.commands import UnknownCommandError, parse_command
from comal.tui.widgets.prompt import PromptArea
from comal.tui.widgets.rewind import RewindScreen
from comal.tui.widgets.transcript import NoticeItem
from tests.tui.conftest import AppFactory, send, settle, until

pytestmark = pytest.mark.tui


def test_rewind_arguments_parse() -> None:
    command = parse_command("/rewind 2 files force")
    assert command is not None
    assert (command.name, command.number, command.mode, command.force) == (
        "rewind",
        2,
        "files",
        True,
    )
    with pytest.raises(UnknownCommandError, match="usage: /rewind"):
        parse_command("/rewind two")


async def test_the_picker_restores_the_file_and_offers_the_message_again(
    make_app: AppFactory, workspace: Path
) -> None:
    write = ToolCallPart("w1", "Write", {"path": "notes.txt", "content": "first\n"})
    edit = ToolCallPart(
        "e1", "Edit", {"path": "notes.txt", "edits": [{"old_string": "first", "new_string": "2nd"}]}
    )
    app = make_app(
        [ScriptedTurn(tool_calls=(write,)), "Wrote.", ScriptedTurn(tool_calls=(edit,)), "Edited."]
    )
    async with app.run_test(size=(110, 40)) as pilot:
        await send(pilot, app, "write the notes")
        await settle(pilot, app)
        await send(pilot, app, "edit the notes")
        await settle(pilot, app)
        assert (workspace / "notes.txt").read_text() == "2nd\n"

        await send(pilot, app, "/rewind")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen))
        screen = app.screen
        assert isinstance(screen, RewindScreen)
        assert [t.files for t in screen.turns] == [
            (str(workspace / "notes.txt"),),
            (str(workspace / "notes.txt"),),
        ]
        await pilot.press("enter")  # the latest turn is listed first
        await until(pilot, lambda: not isinstance(app.screen, RewindScreen))
        await pilot.pause()

        assert (workspace / "notes.txt").read_text() == "first\n"
        assert app.query_one(PromptArea).text == "edit the notes"
        notices = [str(n.text) for n in app.query(NoticeItem)]
        assert any("rewound to before turn 2" in n for n in notices)
        assert app.session is not None
        rewinds = app.session.ledger.entries(app.session.id, kinds=("session.rewound",))
        assert len(rewinds) == 1
        assert rewinds[0].payload["conversation"] is True
