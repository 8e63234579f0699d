"""The habits of other coding agents in the TUI: /status, /cost, /permissions, /config,
/memory, /mcp, /resume, `!command`, Up/Down prompt history across sessions, Ctrl+C."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.ledger.records import UserShell
from comal.ledger.store import Ledger
from comal.messages import ToolCallPart
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.session import session_status
from comal.tui.widgets.prompt import PromptArea
from comal.tui.widgets.reports import TextReport
from comal.tui.widgets.status import StatusBar
from comal.tui.widgets.transcript import NoticeItem, ToolItem, UserItem
from tests.tui.conftest import (
    AppFactory,
    command_after_a_turn,
    permission_prompt,
    send,
    session_id,
    settle,
    until,
)

pytestmark = pytest.mark.tui


def report(app: object, title: str) -> str:
    from comal.tui.app import ComalApp

    assert isinstance(app, ComalApp)
    (found,) = [r for r in app.query(TextReport) if str(r.render()).startswith(title)]
    return found.body


async def test_status_permissions_config_and_memory_report_what_is_in_force(
    make_app: AppFactory, workspace: Path, ledger: Ledger
) -> None:
    (workspace / ".comal").mkdir(exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text(
        '[permissions]\nmode = "workspace-write"\ndeny = [{ tool = "Bash", pattern = "rm *" }]\n'
    )
    (workspace / "AGENTS.md").write_text("Run the tests with make.\n")
    app = make_app(["ok"])
    async with app.run_test(size=(120, 60)) as pilot:
        await command_after_a_turn(pilot, app, "/status")
        for command in ("/permissions", "/config", "/memory", "/cost", "/mcp"):
            await send(pilot, app, command)
            await pilot.pause()
        sid = session_id(app)
        status, permissions = report(app, "Status"), report(app, "Permissions")
        config, memory = report(app, "Configuration"), report(app, "Memory")
        cost, mcp = report(app, "Cost"), report(app, "MCP servers")
    status_rows = dict(line.split(None, 1) for line in status.splitlines())
    assert status_rows["session"] == f"{sid} · resume with: comal --resume {sid}"
    assert status_rows["workspace"] == str(workspace)
    assert status_rows["mode"] == "workspace-write"
    assert status_rows["ledger"] == str(ledger.path)
    assert status_rows["model"] == "scripted/scripted-model (openai-chat)"
    assert permissions.splitlines()[:3] == [
        "mode: workspace-write",
        "rules (deny wins over ask, ask over allow):",
        "  deny  Bash(rm *)",
    ]
    user_file = app.start.config.config_dir / "config.toml"
    assert config.splitlines()[:3] == [
        f"file (absent)  {user_file}",
        f"file (read)    {workspace / '.comal' / 'config.toml'}",
        "provider       scripted (openai-chat)",
    ]
    assert memory.splitlines()[0] == f"{workspace / 'AGENTS.md'} (25 bytes)"
    assert cost.splitlines()[1].startswith("tokens used: ")
    assert mcp.startswith("no MCP server configured")


async def test_a_bang_command_runs_in_the_workspace_and_goes_with_the_next_message(
    make_app: AppFactory, workspace: Path, ledger: Ledger
) -> None:
    app = make_app(["Noted."])
    provider = app.start.provider
    assert isinstance(provider, ScriptedProvider)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, app, "!echo built > made.txt; echo shown; exit 3")
        await until(pilot, lambda: any(t.status for t in app.query(ToolItem)))
        (item,) = app.query(ToolItem)
        assert (item.summary, item.status) == ("! echo built > made.txt; echo shown; exit 3", "ok")
        assert provider.requests == []  # nothing went to the model yet
        await send(pilot, app, "what did it print?")
        await settle(pilot, app)
        sid = session_id(app)
    assert (workspace / "made.txt").read_text() == "built\n"
    (request,) = provider.requests
    assert request.messages[-1].text == (
        "I ran this command in the workspace:\n$ echo built > made.txt; echo shown; exit 3\n"
        "shown\n[exit code: 3]\n\nwhat did it print?"
    )
    (entry,) = ledger.entries(sid, kinds=("user.shell",))
    assert UserShell.from_entry(entry) == UserShell(
        "echo built > made.txt; echo shown; exit 3", 3, False, 6
    )
    assert ledger.body(entry) == b"shown\n"


async def test_up_and_down_recall_prompts_of_this_directory_across_sessions(
    make_app: AppFactory,
) -> None:
    first = make_app(["one", "two"])
    async with first.run_test(size=(100, 30)) as pilot:
        await send(pilot, first, "fix the parser")
        await settle(pilot, first)
        await send(pilot, first, "now the tests")
        await settle(pilot, first)
    second = make_app(["ok"])
    async with second.run_test(size=(100, 30)) as pilot:
        prompt = second.query_one(PromptArea)
        prompt.insert("half typ")
        await pilot.press("up")
        assert prompt.text == "now the tests"
        await pilot.press("up")
        assert prompt.text == "fix the parser"
        await pilot.press("up")  # the oldest stays
        assert prompt.text == "fix the parser"
        await pilot.press("down", "down")
        assert prompt.text == "half typ"  # back to what was being typed


async def test_ctrl_c_clears_the_input_then_quits_when_pressed_twice(
    make_app: AppFactory,
) -> None:
    app = make_app(["ok"])
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = app.query_one(PromptArea)
        prompt.insert("a long message I changed my mind about")
        await pilot.press("ctrl+c")
        assert (prompt.text, app.is_running) == ("", True)
        await pilot.press("ctrl+c")
        assert app.query_one(StatusBar).line.activity == "press Ctrl+C again to quit"
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0


async def test_resume_lists_this_directorys_sessions_and_opens_one(
    make_app: AppFactory,
) -> None:
    first = make_app(["The parser is fixed."])
    async with first.run_test(size=(100, 30)) as pilot:
        await send(pilot, first, "fix the parser")
        await settle(pilot, first)
        earlier = session_id(first)
    first.start.ledger.release_lock(earlier)  # as the launcher does when the app ends
    app = make_app(["ok", "Yes, fixed."])
    async with app.run_test(size=(120, 40)) as pilot:
        await command_after_a_turn(pilot, app, "/resume")
        listed = report(app, "Resume")
        current = session_id(app)
        short = app.start.ledger.short_id(earlier)
        shown, status, age, ask = listed.splitlines()[0].split(" · ")
        assert (shown, status, age, ask) == (
            f" 1. {short}",
            session_status(app.start.ledger, earlier),
            age,
            "fix the parser",
        )
        assert age.endswith("s ago")
        await send(pilot, app, "/resume 1")
        await pilot.pause()
        assert session_id(app) == earlier
        users = [u.text for u in app.query(UserItem)]
        notices = [n.text for n in app.query(NoticeItem)]
        await send(pilot, app, "is it fixed?")
        await settle(pilot, app)
    assert users == ["fix the parser"]
    resumed = f"● resumed session {earlier} · the last one stays resumable: comal --resume"
    assert f"{resumed} {current}" in notices


async def test_ctrl_c_during_a_permission_question_answers_no(
    make_app: AppFactory, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    read = ToolCallPart("call_1", "Read", {"path": str(outside)})
    app = make_app([ScriptedTurn(tool_calls=(read,)), "I could not read it."])
    async with app.run_test(size=(100, 30)) as pilot:
        await permission_prompt(pilot, app, "read the file outside")
        await pilot.press("ctrl+c")
        await settle(pilot, app)
        statuses = [t.status for t in app.query(ToolItem)]
        running = app.is_running
    assert (statuses, running) == (["denied"], True)
