"""The Board tool: a plan of small criteria, recorded as `board.updated`, carried in checkpoints."""

from __future__ import annotations

from comal.agent.core.loop import run_turn
from comal.agent.core.recovery import CONTINUE_PLAN, recover
from comal.agent.features.state import board_of
from comal.context.relief.workstate import work_state
from comal.providers.scripted import ScriptedTurn
from comal.tools.board import Criterion, board_is_open
from tests.unit.recovery.conftest import Bench, call, result_text, results

PLAN = {
    "set": [
        {"id": "write", "text": "greeting.txt says hello", "check": "grep -qx hello greeting.txt"},
        {"text": "tests pass"},
    ]
}


async def test_set_then_update_is_recorded_whole(bench: Bench) -> None:
    turns = [
        ScriptedTurn(tool_calls=(call("c1", "Board", PLAN),)),
        ScriptedTurn(
            tool_calls=(call("c2", "Board", {"update": [{"id": "write", "status": "done"}]}),)
        ),
        "planned",
    ]
    s, _ = bench.open(turns)
    await run_turn(s, "plan it")

    updates = s.ledger.entries(s.id, kinds=("board.updated",))
    assert len(updates) == 2
    assert board_of(s.ledger.entries(s.id)) == (
        Criterion("write", "greeting.txt says hello", "done", "grep -qx hello greeting.txt"),
        Criterion("2", "tests pass", "pending", None),
    )
    assert "[done] write: greeting.txt says hello" in result_text(s, "c2")


async def test_bad_updates_record_nothing_and_say_why(bench: Bench) -> None:
    turns = [
        ScriptedTurn(tool_calls=(call("c1", "Board", PLAN),)),
        ScriptedTurn(
            tool_calls=(call("c2", "Board", {"update": [{"id": "nope", "status": "done"}]}),)
        ),
        ScriptedTurn(
            tool_calls=(
                call("c3", "Board", {"set": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}),
            )
        ),
        ScriptedTurn(
            tool_calls=(call("c4", "Board", {"update": [{"id": "write", "status": "finished"}]}),)
        ),
        "ok",
    ]
    s, _ = bench.open(turns)
    await run_turn(s, "plan")

    statuses = {r["call_id"]: r["status"] for r in results(s)}
    assert statuses == {"c1": "ok", "c2": "error", "c3": "error", "c4": "error"}
    assert "no criterion 'nope'" in result_text(s, "c2")
    assert "used twice" in result_text(s, "c3")
    assert len(s.ledger.entries(s.id, kinds=("board.updated",))) == 1


async def test_the_board_is_carried_in_the_work_state(bench: Bench) -> None:
    s, _ = bench.open([ScriptedTurn(tool_calls=(call("c1", "Board", PLAN),)), "ok"])
    await run_turn(s, "plan")

    state = work_state(s.ledger.entries(s.id), s.ledger)
    assert state.board[0].startswith("[pending] write: greeting.txt says hello")


async def test_an_open_plan_continues_on_resume_without_a_prompt(bench: Bench) -> None:
    s, _ = bench.open([ScriptedTurn(tool_calls=(call("c1", "Board", PLAN),)), "first part done"])
    await run_turn(s, "plan")
    bench.ledger.release_lock(s.id)
    assert board_is_open(board_of(s.ledger.entries(s.id)))

    resumed, provider = bench.open(["continuing"], session_id=s.id)
    report = await recover(resumed)
    assert report.continuation == "open_plan"
    assert await run_turn(resumed, None) == "continuing"

    (request,) = provider.requests
    last = request.messages[-1]
    assert last.role == "user"
    assert CONTINUE_PLAN.split("{board}")[0].strip() in last.text
    assert "greeting.txt says hello" in last.text


async def test_an_answered_session_with_a_closed_board_has_nothing_to_continue(
    bench: Bench,
) -> None:
    done = {"set": [{"text": "everything", "status": "done"}]}
    s, _ = bench.open([ScriptedTurn(tool_calls=(call("c1", "Board", done),)), "all done"])
    await run_turn(s, "plan")
    before = len(s.ledger.entries(s.id))

    report = await recover(s)

    assert report.continuation == "answered"
    assert not report.needs_model_call
    assert report.last_answer == "all done"
    assert len(s.ledger.entries(s.id)) == before
