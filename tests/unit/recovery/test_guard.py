"""The insistence guard: an uncertain call is never repeated without explicit permission."""

from __future__ import annotations

from comal.agent.core.loop import run_turn
from comal.agent.core.recovery import recover
from comal.messages import JSONObject
from comal.providers.scripted import ScriptedTurn
from tests.unit.recovery.conftest import Bench, call, record_reply, record_started, results

APPEND: JSONObject = {"command": "echo once >> log.txt"}


async def _uncertain_bash(bench: Bench) -> str:
    s, _ = bench.open()
    bash = call("c1", "Bash", APPEND)
    record_reply(s, bash)
    await record_started(s, bash, effect=True)
    await recover(s)
    bench.ledger.release_lock(s.id)
    return s.id


async def test_headless_refuses_an_identical_reissue_with_a_clear_receipt(bench: Bench) -> None:
    sid = await _uncertain_bash(bench)
    turns = [
        ScriptedTurn(tool_calls=(call("c2", "Bash", APPEND),)),
        ScriptedTurn(tool_calls=(call("c3", "Bash", {"command": "cat log.txt"}),)),
        "stopped",
    ]
    s, _ = bench.open(turns, session_id=sid)
    await recover(s)

    assert await run_turn(s, None) == "stopped"

    by_call = {r["call_id"]: r for r in results(s)}
    assert by_call["c2"]["status"] == "denied"
    started = {
        e.payload["call_id"]: e.payload for e in s.ledger.entries(s.id, kinds=("tool.started",))
    }
    permission = started["c2"]["permission"]
    assert isinstance(permission, dict)
    assert permission["mode"] == "uncertain-repeat"
    assert "uncertain" in str(permission["reason"])
    assert by_call["c3"]["status"] == "ok"  # a different call runs
    assert (bench.workspace / "log.txt").read_text() == "once\n"


async def test_the_guard_survives_another_resume(bench: Bench) -> None:
    sid = await _uncertain_bash(bench)
    s, _ = bench.open(
        [ScriptedTurn(tool_calls=(call("c2", "Bash", APPEND),)), "ok"], session_id=sid
    )
    report = await recover(s)
    assert report.held_uncertain == 1
    await run_turn(s, None)
    assert (bench.workspace / "log.txt").read_text() == "once\n"


async def test_an_interactive_user_may_confirm_the_repeat(bench: Bench) -> None:
    sid = await _uncertain_bash(bench)
    asked: list[str] = []

    async def confirm(name: str, arguments: JSONObject, reason: str) -> bool:
        asked.append(reason)
        return True

    turns = [ScriptedTurn(tool_calls=(call("c2", "Bash", APPEND),)), "done"]
    s, _ = bench.open(turns, session_id=sid, interactive=True, ask=confirm)
    await recover(s)
    await run_turn(s, None)

    assert len(asked) == 1
    assert "uncertain" in asked[0]
    assert (bench.workspace / "log.txt").read_text() == "once\nonce\n"
    # Once confirmed, a later resume no longer holds it.
    bench.ledger.release_lock(s.id)
    again, _ = bench.open(session_id=sid)
    assert (await recover(again)).held_uncertain == 0


async def test_a_declining_user_keeps_the_call_unrun(bench: Bench) -> None:
    sid = await _uncertain_bash(bench)

    async def decline(name: str, arguments: JSONObject, reason: str) -> bool:
        return False

    turns = [ScriptedTurn(tool_calls=(call("c2", "Bash", APPEND),)), "done"]
    s, _ = bench.open(turns, session_id=sid, interactive=True, ask=decline)
    await recover(s)
    await run_turn(s, None)

    assert {r["call_id"]: r["status"] for r in results(s)}["c2"] == "denied"
    assert (bench.workspace / "log.txt").read_text() == "once\n"
