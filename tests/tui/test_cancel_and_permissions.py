"""Esc cancels a running turn and leaves a verifiable, resumable ledger; a permission `ask`
becomes a modal whose "no" records a denied receipt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from comal.agent.turns import CANCELLED_BEFORE_START
from comal.config import load_config
from comal.ledger.store import Ledger
from comal.messages import ToolCallPart
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.session import open_calls
from comal.testing.sessions import SessionBuilder
from comal.tui.widgets.transcript import AssistantItem, NoticeItem, ToolItem
from tests.tui.conftest import AppFactory, permission_prompt, running_tools, send, settle, until

pytestmark = pytest.mark.tui


def running_with(argument: str) -> list[int]:
    """Host processes with `argument` as one of theirs (a sandboxed command's `$$` is a pid
    of its own namespace, so the sleep is found by its unique length instead)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argument.encode() in args and state not in ("Z", "X"):
            found.append(int(proc.name))
    return found


async def test_escape_cancels_a_slow_turn_and_the_ledger_verifies(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    # The first call writes its pid, then would sleep far longer than the test may take; the
    # second must never run once the user has pressed Esc.
    length = f"60.{os.getpid()}"
    slow = ToolCallPart("call_1", "Bash", {"command": f"touch pid; sleep {length}"})
    after = ToolCallPart("call_2", "Bash", {"command": "echo ran > after.txt"})
    app = make_app([ScriptedTurn(text="Sleeping.", tool_calls=(slow, after)), "Back again."])
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, app, "sleep for a minute")
        await until(pilot, lambda: bool(running_tools(app)) and (workspace / "pid").exists())
        await pilot.press("escape")
        await settle(pilot, app)
        tools = [t.status for t in app.query(ToolItem)]
        notices = [n.text for n in app.query(NoticeItem)]
        provider = app.start.provider
        assert isinstance(provider, ScriptedProvider)
        assert app.session is not None
        sid = app.session.id
        status_after_cancel = ledger.session(sid).status
        left_after_cancel = provider.remaining

        await send(pilot, app, "carry on")
        await settle(pilot, app)
        answers = [a.text for a in app.query(AssistantItem)]
    assert tools == ["error"]
    assert status_after_cancel == "interrupted"
    assert left_after_cancel == 1
    assert any(f"turn cancelled · session {sid} is resumable" in n for n in notices)
    assert running_with(length) == []
    assert not (workspace / "after.txt").exists()
    results = {r.payload["call_id"]: r for r in ledger.entries(sid, kinds=("tool.result",))}
    assert b"[cancelled; process group killed]" in (ledger.body(results["call_1"]) or b"")
    assert results["call_2"].payload["status"] == "denied"
    assert ledger.body(results["call_2"]) == CANCELLED_BEFORE_START.encode()
    assert answers == ["Sleeping.", "Back again."]
    assert ledger.session(sid).status == "active"
    assert open_calls(ledger.entries(sid)) == ()
    assert ledger.verify(sid).ok


async def test_resume_recovers_a_dangling_call_before_the_next_turn(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    sb = SessionBuilder(ledger, model="scripted-model", window=45_000, cwd=str(workspace))
    sb.user("write the side file")
    _, (call_id,) = sb.assistant("Writing.", [("Bash", {"command": "echo x > side.txt"})])
    sb.append(
        "tool.started",
        {
            "call_id": call_id,
            "name": "Bash",
            "arguments": {"command": "echo x > side.txt"},
            "permission": {"decision": "allow", "mode": "workspace-write", "reason": "test"},
        },
    )
    app = make_app(["I will check the file first."], session_id=sb.session_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        notices = [n.text for n in app.query(NoticeItem)]
        await send(pilot, app, "continue")
        await settle(pilot, app)
    assert any("1 pending and 0 uncertain call(s)" in n for n in notices)
    kinds = [(e.kind, e.payload.get("status")) for e in ledger.entries(sb.session_id)]
    recovered = kinds.index(("tool.result", "uncertain"))
    assert recovered < kinds.index(("message.user", None), recovered)
    assert not (workspace / "side.txt").exists()
    assert open_calls(ledger.entries(sb.session_id)) == ()


async def test_escape_while_idle_does_nothing(make_app: AppFactory, ledger: Ledger) -> None:
    app = make_app([])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("escape")
        await pilot.pause()
        assert app.turn is None
    assert ledger.sessions() == []


def read_outside(tmp_path: Path, text: str) -> ScriptedTurn:
    """A turn that Reads `outside.txt` (holding `text`), beside the workspace: it asks."""
    outside = tmp_path / "outside.txt"
    outside.write_text(text)
    return ScriptedTurn(tool_calls=(ToolCallPart("call_1", "Read", {"path": str(outside)}),))


async def test_a_declined_permission_prompt_records_a_denied_receipt(
    make_app: AppFactory, ledger: Ledger, tmp_path: Path
) -> None:
    app = make_app([read_outside(tmp_path, "secret\n"), "I could not read it."])
    async with app.run_test(size=(100, 30)) as pilot:
        asked = await permission_prompt(pilot, app, "read the file outside")
        await pilot.press("n")
        await settle(pilot, app)
        tools = list(app.query(ToolItem))
        assert app.session is not None
        sid = app.session.id
    assert asked.tool == "Read"
    assert "outside the workspace" in asked.reason
    assert [t.status for t in tools] == ["denied"]
    started = ledger.entries(sid, kinds=("tool.started",))[-1]
    permission = started.payload["permission"]
    assert isinstance(permission, dict)
    assert permission["decision"] == "deny"
    assert str(permission["reason"]).startswith("declined by the user")
    result = ledger.entries(sid, kinds=("tool.result",))[-1]
    assert result.payload["status"] == "denied"
    assert b"secret" not in (ledger.body(result) or b"")


async def test_an_accepted_permission_prompt_runs_the_call(
    make_app: AppFactory, ledger: Ledger, tmp_path: Path
) -> None:
    app = make_app([read_outside(tmp_path, "visible\n"), "Read it."])
    async with app.run_test(size=(100, 30)) as pilot:
        await permission_prompt(pilot, app, "read the file outside")
        await pilot.press("y")
        await settle(pilot, app)
        assert app.session is not None
        sid = app.session.id
    result = ledger.entries(sid, kinds=("tool.result",))[-1]
    assert result.payload["status"] == "ok"
    assert b"visible" in (ledger.body(result) or b"")


async def test_always_allow_writes_the_rule_and_stops_asking(
    make_app: AppFactory, ledger: Ledger, tmp_path: Path, workspace: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("visible\n")
    (workspace / ".comal").mkdir()
    config = workspace / ".comal" / "config.toml"
    config.write_text('# my settings\n[permissions]\nmode = "workspace-write"\n')
    first = ToolCallPart("call_1", "Read", {"path": str(outside)})
    again = ToolCallPart("call_2", "Read", {"path": str(outside)})
    turns = [ScriptedTurn(tool_calls=(first,)), ScriptedTurn(tool_calls=(again,)), "Read twice."]
    app = make_app(turns)
    async with app.run_test(size=(100, 30)) as pilot:
        asked = await permission_prompt(pilot, app, "read the file outside twice")
        await pilot.press("a")
        await settle(pilot, app)
        assert app.session is not None
        sid = app.session.id
    assert asked.always == (str(outside),)
    results = ledger.entries(sid, kinds=("tool.result",))
    assert [r.payload["status"] for r in results] == ["ok", "ok"]
    started = ledger.entries(sid, kinds=("tool.started",))
    permissions = [s.payload["permission"] for s in started]
    reasons = [p["reason"] for p in permissions if isinstance(p, dict)]
    assert str(reasons[0]).startswith("confirmed by the user")
    assert reasons[1] == f"allowed by allow rule Read({outside})"
    text = config.read_text()
    assert text.startswith("# my settings\n")
    rules = load_config(cwd=workspace).permissions.rules
    assert [(r.action, r.tool, r.pattern) for r in rules] == [("allow", "Read", str(outside))]


async def test_always_is_not_offered_when_a_rule_would_not_change_the_verdict(
    make_app: AppFactory, workspace: Path
) -> None:
    (workspace / ".comal").mkdir()
    (workspace / ".comal" / "config.toml").write_text(
        '[permissions]\nask = [{ tool = "Bash", pattern = "echo *" }]\n'
    )
    call = ToolCallPart("call_1", "Bash", {"command": "echo hi"})
    app = make_app([ScriptedTurn(tool_calls=(call,)), "Done."])
    async with app.run_test(size=(100, 30)) as pilot:
        asked = await permission_prompt(pilot, app, "say hi")
        offered = asked.always
        await pilot.press("a")  # not offered: ignored
        await pilot.pause()
        assert app.screen is asked
        await pilot.press("n")
        await settle(pilot, app)
    assert offered == ()


async def test_a_command_that_could_match_a_deny_rule_is_asked(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    (workspace / ".comal").mkdir()
    (workspace / ".comal" / "config.toml").write_text(
        '[permissions]\ndeny = [{ tool = "Bash", pattern = "rm -rf *" }]\n'
    )
    (workspace / "keep").mkdir()
    dynamic = ToolCallPart("call_1", "Bash", {"command": "p=rm; $p -rf keep"})
    app = make_app([ScriptedTurn(tool_calls=(dynamic,)), "Left it."])
    async with app.run_test(size=(100, 30)) as pilot:
        asked = await permission_prompt(pilot, app, "clean up")
        reason, offered = asked.reason, asked.always
        await pilot.press("n")
        await settle(pilot, app)
    assert "could match deny rule Bash(rm -rf *)" in reason
    assert offered == ()
    assert (workspace / "keep").is_dir()
