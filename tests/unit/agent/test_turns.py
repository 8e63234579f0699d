"""The turn lifecycle of `agent.turns` against the scripted provider, with no front end: a cancel
mid tool call and mid stream leaves an `interrupted`, verifiable, resumable session whose
unstarted calls are denied; `/compact` is derived, queued for the turn boundary, dropped with a
cancel, or refused when it would not make the view smaller."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.agent.core.events import AgentEvent, TextStreamed, ToolStarted, TurnStarted
from comal.agent.core.session import SessionOptions
from comal.agent.turns import (
    CANCELLED_BEFORE_START,
    cancel_turn,
    compact,
    end_turn,
    run_session,
    start_turn,
)
from comal.ledger.store import Ledger
from comal.messages import ToolCallPart
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.session import open_calls, session_status
from comal.testing.sessions import SessionBuilder
from tests.unit.agent.session_support import opened


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(tmp_path / "home" / "ledger.db") as opened:
        yield opened


async def test_a_cancel_mid_tool_call_denies_the_unstarted_calls_and_the_session_resumes(
    ledger: Ledger, workspace: Path
) -> None:
    slow = ToolCallPart("call_1", "Bash", {"command": "echo $$ > pid; sleep 60"})
    after = ToolCallPart("call_2", "Bash", {"command": "echo ran > after.txt"})
    provider = ScriptedProvider(
        [ScriptedTurn(text="Sleeping.", tool_calls=(slow, after)), "Back again."]
    )
    cancel = asyncio.Event()

    def emit(event: AgentEvent) -> None:
        # A front end's cancel: the event stops the running Bash (which records its receipt),
        # and the turn stops at its next cancellation point, before the next call starts.
        if cancel.is_set() and isinstance(event, ToolStarted | TurnStarted):
            raise asyncio.CancelledError("cancelled by the user")

    options = SessionOptions(emit=emit, cancel=cancel)
    session = opened(ledger, workspace, provider, options=options)
    turn = asyncio.create_task(run_session(session, "sleep for a minute"))
    for _ in range(500):
        if (workspace / "pid").exists():
            break
        await asyncio.sleep(0.02)
    assert (workspace / "pid").exists()
    assert ledger.session(session.id).status == "active"
    cancel.set()
    with pytest.raises(asyncio.CancelledError):
        await turn
    cancel.clear()
    assert end_turn(session, cancelled=True) is None

    assert ledger.session(session.id).status == "interrupted"
    assert session_status(ledger, session.id) == "interrupted"
    results = {r.payload["call_id"]: r for r in ledger.entries(session.id, kinds=("tool.result",))}
    assert b"[cancelled; process group killed]" in (ledger.body(results["call_1"]) or b"")
    assert results["call_2"].payload["status"] == "denied"
    assert ledger.body(results["call_2"]) == CANCELLED_BEFORE_START.encode()
    assert open_calls(ledger.entries(session.id)) == ()
    assert ledger.verify(session.id).ok
    ledger.release_lock(session.id)
    assert session_status(ledger, session.id) == "interrupted"  # derived: no holder now

    again = opened(ledger, workspace, provider, session_id=session.id)
    outcome = await start_turn(again, "carry on", recover_first=True)
    assert (outcome.status, outcome.answer) == ("answered", "Back again.")
    assert ledger.session(session.id).status == session_status(ledger, session.id) == "active"
    assert not (workspace / "after.txt").exists()
    assert provider.remaining == 0


async def test_a_cancel_mid_stream_records_the_request_and_nothing_of_the_partial_answer(
    ledger: Ledger, workspace: Path
) -> None:
    events: list[AgentEvent] = []

    def emit(event: AgentEvent) -> None:
        events.append(event)
        if isinstance(event, TextStreamed) and event.text == "The first ":
            # What a front end's cancel does at this point of the stream (the TUI raises it
            # from its event handler, as `Task.cancel()` would at the next await).
            raise asyncio.CancelledError("cancelled by the user")

    stream = ScriptedTurn(text="The first words, and the rest.", chunk_size=10)
    provider = ScriptedProvider([stream, "Back again."])
    session = opened(ledger, workspace, provider, options=SessionOptions(emit=emit))
    with pytest.raises(asyncio.CancelledError):
        await run_session(session, "tell me a story")
    assert end_turn(session, cancelled=True) is None

    kinds = [e.kind for e in ledger.entries(session.id)]
    assert kinds[kinds.index("message.user") :] == ["message.user", "provider.request"]
    assert ledger.session(session.id).status == "interrupted"
    assert ledger.verify(session.id).ok

    outcome = await start_turn(session, "carry on", recover_first=True)
    assert (outcome.status, outcome.answer) == ("answered", "Back again.")
    assert "The first" not in provider.bodies[1].decode()
    assert ledger.session(session.id).status == "active"


def long_history(ledger: Ledger, workspace: Path, turns: int) -> str:
    """A session whose history holds `turns` large reads, built straight into the ledger."""
    sb = SessionBuilder(ledger, model="scripted-model", window=45_000, cwd=str(workspace))
    sb.user("Go.")
    for i in range(turns):
        lines = "\n".join(f"src/r{i}/module_{n}.py:{n}: def handler_{n}(x)" for n in range(60))
        sb.turn(f"Reading part {i}.", [("Read", {"path": f"src/r{i}.py"}, lines, None)])
    sb.answer("Read them all.")
    return sb.session_id


async def test_a_compaction_is_queued_for_the_turn_boundary_or_derived_at_once(
    ledger: Ledger, workspace: Path
) -> None:
    sid = long_history(ledger, workspace, 16)
    session = opened(ledger, workspace, ScriptedProvider([]), session_id=sid)

    queued = compact(session, running=True)
    assert queued.queued
    assert ledger.entries(sid)[-1].kind == "compact.requested"
    assert ledger.entries(sid)[-1].payload == {"by": "user"}
    assert session.engine.pending_compaction() == "user"
    at_boundary = end_turn(session, cancelled=False)
    assert at_boundary is not None
    assert at_boundary.checkpoint is not None
    assert at_boundary.checkpoint.number == 1
    assert at_boundary.checkpoint.after_tokens < at_boundary.checkpoint.before_tokens
    assert session.engine.pending_compaction() is None
    assert end_turn(session, cancelled=False) is None

    # At once, right after that checkpoint, there is nothing left to make smaller.
    now = compact(session, running=False)
    assert now.checkpoint is None
    assert now.failed is None
    assert not now.queued
    assert now.refused is not None
    assert now.refused.startswith("compaction refused")
    assert ledger.entries(sid)[-1].kind == "compact.cancelled"
    assert [c.number for c in session.engine.checkpoints()] == [1]


async def test_a_cancel_drops_a_queued_compaction(ledger: Ledger, workspace: Path) -> None:
    sid = long_history(ledger, workspace, 16)
    session = opened(ledger, workspace, ScriptedProvider([]), session_id=sid)
    assert cancel_turn(session) is False  # nothing queued: nothing recorded
    assert compact(session, running=True).queued
    assert cancel_turn(session) is True
    assert ledger.entries(sid)[-1].kind == "compact.cancelled"
    assert ledger.entries(sid)[-1].payload == {"by": "user"}
    assert session.engine.pending_compaction() is None
    assert end_turn(session, cancelled=True) is None
    assert ledger.entries(sid, kinds=("checkpoint",)) == []


async def test_a_compaction_that_would_not_make_the_view_smaller_is_refused(
    ledger: Ledger, workspace: Path
) -> None:
    provider = ScriptedProvider(["First answer.", "Second answer."])
    session = opened(ledger, workspace, provider)
    assert (await run_session(session, "remember the number 7")).answer == "First answer."
    before = [(e.id, e.kind) for e in ledger.entries(session.id)]

    refused = compact(session, running=False)

    assert refused.checkpoint is None
    assert refused.failed is None
    assert refused.refused is not None
    assert refused.refused.startswith("compaction refused: a checkpoint would not make the view")
    entries = ledger.entries(session.id)
    assert [(e.id, e.kind) for e in entries[: len(before)]] == before
    assert [e.kind for e in entries[len(before) :]] == ["compact.cancelled"]
    assert entries[-1].payload["reason"] == "not_smaller"
    # The session goes on as it was.
    assert (await run_session(session, "and now?")).answer == "Second answer."
    assert ledger.session(session.id).status == "active"
