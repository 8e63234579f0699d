"""A user turn in the TUI: streamed text, a real tool call in a tmp workspace, queued
messages, and a resumed session that shows its history."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events

from comal.ledger.entry import Entry
from comal.ledger.store import Ledger
from comal.messages import ToolCallPart, message_from_json
from comal.providers.scripted import ScriptedTurn
from comal.tui.widgets.status import StatusBar
from comal.tui.widgets.transcript import AssistantItem, NoticeItem, ToolItem, UserItem
from tests.tui.conftest import (
    AppFactory,
    gated_call,
    send,
    send_while_running,
    session_id,
    settle,
    until,
)

pytestmark = pytest.mark.tui


def message_text(entry: Entry) -> str:
    raw = entry.payload["message"]
    assert isinstance(raw, dict)
    return message_from_json(raw).text


async def test_a_text_answer_streams_into_the_transcript(
    make_app: AppFactory, ledger: Ledger
) -> None:
    app = make_app([ScriptedTurn(text="Hello **there**, ready.", chunk_size=4)])
    async with app.run_test(size=(100, 30)) as pilot:
        app.post_message(events.Paste("hi\npasted second line"))
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot, app)
        users = [u.text for u in app.query(UserItem)]
        answers = [a.text for a in app.query(AssistantItem)]
        status = app.query_one(StatusBar).line
        sid = session_id(app)
        short = ledger.short_id(sid)
    assert users == ["hi\npasted second line"]
    assert answers == ["Hello **there**, ready."]
    assert status.session_id == short  # the short id people type, as `comal sessions` shows
    assert f"· {short} ·" in status.render_text()
    assert status.activity == "idle"
    assert status.used_tokens is not None
    assert status.used_tokens > 0
    assert "ctx ~" in status.render_text() or "measured base" in status.render_text()
    kinds = [e.kind for e in ledger.entries(sid)]
    assert kinds.count("message.user") == 1
    assert kinds.count("message.assistant") == 1
    assert ledger.session(sid).status == "active"


async def test_a_tool_call_runs_bash_in_the_workspace(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    call = ToolCallPart("call_1", "Bash", {"command": "echo made > out.txt && cat out.txt"})
    app = make_app([ScriptedTurn(text="Writing it.", tool_calls=(call,)), "Done."])
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, app, "make a file")
        await settle(pilot, app)
        tools = list(app.query(ToolItem))
        answers = [a.text for a in app.query(AssistantItem)]
        sid = session_id(app)
    assert (workspace / "out.txt").read_text() == "made\n"
    assert [(t.call_id, t.status) for t in tools] == [("call_1", "ok")]
    assert "exit 0" in str(tools[0].render())
    assert answers == ["Writing it.", "Done."]
    results = ledger.entries(sid, kinds=("tool.result",))
    assert [(r.payload["status"], r.payload["exit_code"]) for r in results] == [("ok", 0)]
    assert ledger.body(results[0]) == b"made\n"


async def test_messages_sent_during_a_turn_wait_their_turn(
    make_app: AppFactory, ledger: Ledger, workspace: Path
) -> None:
    app = make_app([ScriptedTurn(tool_calls=(gated_call(),)), "first done", "second done"])
    async with app.run_test(size=(100, 30)) as pilot:
        await send_while_running(pilot, app, "first", "second")
        assert app.queued == ["second"]
        (workspace / "gate").touch()
        await until(pilot, lambda: not app.queued)
        await settle(pilot, app)
        sid = session_id(app)
    users = ledger.entries(sid, kinds=("message.user",))
    assert [message_text(e) for e in users] == ["first", "second"]


async def test_resume_shows_the_recorded_history_and_holds_the_lock(
    make_app: AppFactory, ledger: Ledger
) -> None:
    first = make_app(["The answer is 42."])
    async with first.run_test(size=(100, 30)) as pilot:
        await send(pilot, first, "what is the answer?")
        await settle(pilot, first)
        assert first.session is not None
        sid = first.session.id
    ledger.release_lock(sid)

    again = make_app([], session_id=sid)
    async with again.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        users = [u.text for u in again.query(UserItem)]
        answers = [a.text for a in again.query(AssistantItem)]
        notices = [n.text for n in again.query(NoticeItem)]
        holder = ledger.lock_holder(sid)
    assert users == ["what is the answer?"]
    assert answers == ["The answer is 42."]
    assert any(f"session {sid} resumed" in n for n in notices)
    assert holder is not None


async def test_a_refusal_is_shown_as_a_refusal_not_an_answer(
    make_app: AppFactory, ledger: Ledger
) -> None:
    app = make_app([ScriptedTurn(refusal="I can't help with that.")])
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, app, "do the bad thing")
        await settle(pilot, app)
        (reply,) = app.query(AssistantItem)
        notices = [n.text for n in app.query(NoticeItem) if n.kind == "refused"]
        sid = session_id(app)
    assert reply.text == "I can't help with that."
    assert reply.has_class("refused")
    assert notices == ["⊘ the model refused — this is not an answer"]
    (entry,) = ledger.entries(sid, kinds=("message.assistant",))
    assert entry.payload["finish"] == "refusal"
    assert ledger.session(sid).status == "active"
    ledger.release_lock(sid)

    again = make_app([], session_id=sid)
    async with again.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        (past,) = again.query(AssistantItem)
        past_notices = [n.text for n in again.query(NoticeItem) if n.kind == "refused"]
    assert past.text == "I can't help with that."
    assert past.has_class("refused")
    assert past_notices == ["⊘ the model refused — this is not an answer"]
