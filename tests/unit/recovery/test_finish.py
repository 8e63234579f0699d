"""finish_call closes a session only when the configured and criterion checks pass."""

from __future__ import annotations

from comal.agent.core.loop import run_turn
from comal.providers.scripted import ScriptedTurn
from tests.unit.recovery.conftest import Bench, call, result_text, results

FINISH = {"answer": "greeting written"}


async def test_passing_checks_close_the_session_and_end_the_turn(bench: Bench) -> None:
    (bench.workspace / "greeting.txt").write_text("hello\n")
    bench.checks = ("grep -qx hello greeting.txt",)
    plan = {"set": [{"text": "greet", "status": "done", "check": "test -s greeting.txt"}]}
    turns = [
        ScriptedTurn(tool_calls=(call("c1", "Board", plan),)),
        ScriptedTurn(tool_calls=(call("c2", "finish_call", FINISH),)),
    ]
    s, provider = bench.open(turns)

    assert await run_turn(s, "greet") == "greeting written"

    assert provider.remaining == 0  # no model call after the successful finish_call
    assert s.ledger.session(s.id).status == "finished"
    (finished,) = s.ledger.entries(s.id, kinds=("session.finished",))
    assert finished.payload == {
        "answer": "greeting written",
        "checks": [
            {"command": "grep -qx hello greeting.txt", "exit_code": 0, "passed": True},
            {"command": "test -s greeting.txt", "exit_code": 0, "passed": True},
        ],
    }
    assert "All 2 checks passed" in result_text(s, "c2")


async def test_a_failing_check_keeps_the_session_open_with_its_output(bench: Bench) -> None:
    bench.checks = ("echo 'FAILED test_greeting' && exit 3",)
    turns = [ScriptedTurn(tool_calls=(call("c1", "finish_call", FINISH),)), "I will fix it"]
    s, provider = bench.open(turns)

    assert await run_turn(s, "greet") == "I will fix it"

    (result,) = results(s)
    assert result["status"] == "error"
    text = result_text(s, "c1")
    assert "1 of 1 checks failed" in text
    assert "FAILED test_greeting" in text
    assert "exit 3" in text
    assert s.ledger.entries(s.id, kinds=("session.finished",)) == []
    assert s.ledger.session(s.id).status != "finished"
    assert provider.remaining == 0


async def test_open_criteria_refuse_to_finish(bench: Bench) -> None:
    plan = {"set": [{"id": "x", "text": "not yet", "status": "in_progress"}]}
    turns = [
        ScriptedTurn(tool_calls=(call("c1", "Board", plan),)),
        ScriptedTurn(tool_calls=(call("c2", "finish_call", FINISH),)),
        "ok",
    ]
    s, _ = bench.open(turns)
    await run_turn(s, "go")

    assert "1 board criteria are still open" in result_text(s, "c2")
    assert s.ledger.session(s.id).status != "finished"


async def test_a_criterion_check_obeys_the_permissions_of_the_process(bench: Bench) -> None:
    bench.mode = "read-only"
    plan = {"set": [{"text": "x", "status": "done", "check": "true"}]}
    turns = [
        ScriptedTurn(tool_calls=(call("c1", "Board", plan),)),
        ScriptedTurn(tool_calls=(call("c2", "finish_call", FINISH),)),
        "blocked",
    ]
    s, _ = bench.open(turns)
    await run_turn(s, "go")

    text = result_text(s, "c2")
    assert "not run: read-only mode does not allow Bash" in text
    assert s.ledger.session(s.id).status != "finished"
