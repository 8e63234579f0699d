"""Recovery of read-only calls killed before their result: made again, or closed from the ledger.

A read-only call changed nothing outside the session's ledger, so the resumed process makes it
again with its own permissions; a finish_call whose close is recorded gets its result from that
close, and its checks never run twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from comal.agent.core.recovery import recover
from comal.agent.core.session import Session
from comal.agent.turns import resume_session
from comal.config import PermissionRule
from comal.providers.scripted import ScriptedProvider
from comal.session import open_calls
from tests.unit.recovery.conftest import (
    Bench,
    call,
    record_reply,
    record_started,
    result_text,
    results,
)

FINISH = {"answer": "notes checked"}
CHECK = "echo ran >> checks.log"


async def _killed_finish(
    bench: Bench, turns: Sequence[str] = (), *, effect: bool = False
) -> tuple[Session, ScriptedProvider]:
    """A session whose finish_call started and left no result (its close too, with `effect`)."""
    s, provider = bench.open(turns)
    finish = call("f1", "finish_call", FINISH)
    record_reply(s, finish)
    await record_started(s, finish, effect=effect)
    return s, provider


def _starts(bench: Bench, session_id: str, call_id: str) -> int:
    started = bench.ledger.entries(session_id, kinds=("tool.started",))
    return sum(1 for e in started if e.payload.get("call_id") == call_id)


async def test_a_read_killed_before_its_result_is_made_again(bench: Bench) -> None:
    (bench.workspace / "notes.txt").write_text("the notes\n")
    s, provider = bench.open()
    read = call("c1", "Read", {"path": "notes.txt"})
    record_reply(s, read)
    await record_started(s, read)

    report = await recover(s)

    (result,) = results(s)
    assert result["status"] == "ok"
    assert "the notes" in result_text(s, "c1")
    assert [(c.call_id, c.status) for c in report.calls] == [("c1", "repeated")]
    assert _starts(bench, s.id, "c1") == 1  # the recorded start stands; no second one
    assert report.continuation == "pending_calls"  # the model sees the result next
    assert provider.remaining == 0


async def test_a_read_this_process_may_not_make_is_denied_not_made(bench: Bench) -> None:
    (bench.workspace / "secret.txt").write_text("hidden\n")
    s, _ = bench.open()
    read = call("c1", "Read", {"path": "secret.txt"})
    record_reply(s, read)
    await record_started(s, read)
    bench.ledger.release_lock(s.id)
    bench.rules = (PermissionRule("deny", "Read", "secret.txt"),)
    resumed, _ = bench.open(session_id=s.id)

    await recover(resumed)

    (result,) = results(resumed)
    assert result["status"] == "denied"
    assert "hidden" not in result_text(resumed, "c1")


async def test_a_finish_killed_before_its_close_runs_its_checks_again_and_closes(
    bench: Bench,
) -> None:
    bench.checks = (CHECK,)
    s, provider = await _killed_finish(bench)

    outcome = await resume_session(s, None)

    assert outcome.status == "finished"
    assert outcome.answer == "notes checked"
    assert s.ledger.session(s.id).status == "finished"
    assert (bench.workspace / "checks.log").read_text() == "ran\n"
    (result,) = results(s)
    assert result["status"] == "ok"
    assert provider.remaining == 0  # no model call: the model's own finish closed it


async def test_a_finish_whose_checks_fail_when_made_again_leaves_the_session_open(
    bench: Bench,
) -> None:
    bench.checks = ("test -f missing.txt",)
    s, _ = await _killed_finish(bench, ["I will create it"])

    outcome = await resume_session(s, None)

    (result,) = results(s)
    assert result["status"] == "error"
    assert s.ledger.entries(s.id, kinds=("session.finished",)) == []
    assert outcome.status == "answered"  # the model was told the checks failed, and answered
    assert outcome.answer == "I will create it"


async def test_a_finish_killed_after_its_close_gets_its_result_from_the_close(
    bench: Bench,
) -> None:
    bench.checks = (CHECK,)
    s, provider = await _killed_finish(bench, effect=True)  # the close is recorded, not the result
    assert s.ledger.session(s.id).status == "finished"
    assert len(open_calls(s.ledger.entries(s.id))) == 1

    outcome = await resume_session(s, None)

    assert outcome.status == "finished"
    assert outcome.answer == "notes checked"
    (result,) = results(s)
    assert result["status"] == "ok"
    assert "nothing was run again" in result_text(s, "f1")
    assert (bench.workspace / "checks.log").read_text() == "ran\n"  # checks ran once
    assert open_calls(s.ledger.entries(s.id)) == ()
    assert len(s.ledger.entries(s.id, kinds=("session.finished",))) == 1
    assert provider.remaining == 0
