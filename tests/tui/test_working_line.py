"""The working line while a turn runs: the running command, elapsed time, tokens and "esc to
interrupt"; the call's output growing in its item; hidden again when the turn ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.messages import ToolCallPart
from comal.providers.scripted import ScriptedTurn
from comal.tui.widgets.transcript import ToolItem
from comal.tui.widgets.working import WorkingLine
from tests.tui.conftest import AppFactory, running_tools, send, settle, until

pytestmark = pytest.mark.tui

COMMAND = "echo compiling; echo linking; while [ ! -f gate ]; do sleep 0.02; done; echo done"


async def test_the_working_line_and_the_growing_output_of_the_running_command(
    make_app: AppFactory, workspace: Path
) -> None:
    call = ToolCallPart("call_1", "Bash", {"command": COMMAND})
    app = make_app([ScriptedTurn(text="Building.", tool_calls=(call,)), "Built."])
    async with app.run_test(size=(120, 30)) as pilot:
        line = app.query_one(WorkingLine)
        assert [line.display] == [False]
        await send(pilot, app, "build it")
        await until(pilot, lambda: bool(running_tools(app)))
        (item,) = running_tools(app)
        await until(pilot, lambda: "linking" in item.output)
        assert [line.display] == [True]
        assert line.working is not None
        text = line.text
        assert text.startswith(f"{text[0]} Bash {COMMAND[:26]}… · ")  # clipped: the tail fits
        assert text.endswith(" tokens · esc to interrupt")
        assert (line.working.input_tokens > 0, line.working.call) == (True, f"Bash {COMMAND}")
        assert item.output == "compiling\nlinking\n"
        (workspace / "gate").write_text("")
        await settle(pilot, app)
        assert ([line.display], line.text) == ([False], "")
        (done,) = [t for t in app.query(ToolItem) if t.status is not None]
        assert done.status == "ok"
