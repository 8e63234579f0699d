"""`/state` is a pure view of the ledger; resuming a finished session makes no model call."""

from __future__ import annotations

import json

from comal.agent.core.recovery import recover
from comal.agent.features.state import render_state, session_state, state_to_json
from comal.agent.turns import resume_session, run_session
from comal.providers.scripted import ScriptedTurn
from comal.usage import Usage
from tests.unit.recovery.conftest import Bench, call, record_reply, record_started

PLAN = {"set": [{"id": "1", "text": "write it", "status": "done"}]}


async def test_state_lists_board_pending_uncertain_and_usage(bench: Bench) -> None:
    turns = [
        ScriptedTurn(
            tool_calls=(call("c1", "Board", PLAN),),
            usage=Usage(new_input=120, cache_read=30, output=12),
        ),
        ScriptedTurn(text="done", usage=Usage(new_input=50, output=4)),
    ]
    s, _ = bench.open(turns)
    await run_session(s, "start")
    bash = call("c9", "Bash", {"command": "true"})
    record_reply(s, bash)
    await record_started(s, bash)
    s.ledger.append(
        s.id,
        "provider.request",
        {"sha256": "sha256:0", "size_bytes": 0, "estimated_input_tokens": 777},
    )

    before = session_state(s.ledger, s.id)
    assert [p.call.call_id for p in before.pending] == ["c9"]
    assert before.pending[0].started is not None
    assert before.lock is not None
    assert before.lock.pid > 0
    assert [c.text for c in before.board] == ["write it"]
    assert not before.plan_open
    assert before.usage.requests == 3
    assert before.usage.measured_responses >= 2
    assert before.usage.estimated_input_tokens == 777
    assert before.usage.measured.cache_read == 30

    await recover(s)
    after = session_state(s.ledger, s.id)
    assert after.pending == ()
    assert [u.call_id for u in after.uncertain] == ["c9"]
    assert after.evidence_count == 2

    text = render_state(after)
    assert f"session {s.id}" in text
    assert "[done] 1: write it" in text
    assert "uncertain calls: 1" in text
    assert "~777 input tokens estimated where the server gave no count" in text
    data = state_to_json(after)
    assert json.loads(json.dumps(data)) == data
    uncertain = data["uncertain_calls"]
    assert isinstance(uncertain, list)
    assert isinstance(uncertain[0], dict)
    assert uncertain[0]["name"] == "Bash"
    assert data["last_checkpoint"] is None


async def test_a_finished_session_resumes_without_calling_the_model(bench: Bench) -> None:
    turns = [ScriptedTurn(tool_calls=(call("c1", "finish_call", {"answer": "all good"}),))]
    s, _ = bench.open(turns)
    first = await run_session(s, "do it")
    assert first.status == "finished"
    bench.ledger.release_lock(s.id)

    again, provider = bench.open([], session_id=s.id)  # any model call would raise
    outcome = await resume_session(again, None)

    assert (outcome.status, outcome.answer, outcome.error) == ("finished", "all good", None)
    assert provider.requests == []
    assert session_state(bench.ledger, s.id).final_answer == "all good"


async def test_a_finish_entry_without_its_status_update_still_counts(bench: Bench) -> None:
    s, _ = bench.open(["hello"])
    await run_session(s, "hi")
    # A crash between `session.finished` and the status update leaves exactly this.
    s.ledger.append(s.id, "session.finished", {"answer": "closed", "checks": []})
    bench.ledger.release_lock(s.id)

    again, provider = bench.open([], session_id=s.id)
    outcome = await resume_session(again, None)

    assert outcome.status == "finished"
    assert bench.ledger.session(s.id).status == "finished"
    assert provider.requests == []


async def test_a_new_message_reopens_a_finished_session(bench: Bench) -> None:
    s, _ = bench.open([ScriptedTurn(tool_calls=(call("c1", "finish_call", {"answer": "v1"}),))])
    await run_session(s, "do it")
    bench.ledger.release_lock(s.id)

    again, provider = bench.open(["more done"], session_id=s.id)
    outcome = await resume_session(again, "one more thing")

    assert (outcome.status, outcome.answer) == ("answered", "more done")
    assert len(provider.requests) == 1
    assert provider.requests[0].messages[-1].text == "one more thing"


async def test_an_answered_session_without_open_work_makes_no_call(bench: Bench) -> None:
    s, _ = bench.open(["the answer"])
    await run_session(s, "q")
    bench.ledger.release_lock(s.id)

    again, provider = bench.open([], session_id=s.id)
    outcome = await resume_session(again, None)

    assert (outcome.status, outcome.answer) == ("answered", "the answer")
    assert provider.requests == []
