"""`run_turn` on its own: a real session (ledger, workspace, tools, context engine) driven by the
scripted provider, checked through the entries it appends, the requests it sends and the events
it emits."""

from __future__ import annotations

import pytest

from comal.agent.core.events import (
    AssistantReplied,
    Refused,
    TextStreamed,
    ToolFinished,
    TurnStarted,
)
from comal.agent.core.loop import run_turn
from comal.errors import (
    AuthError,
    BudgetError,
    ContextLengthError,
    OutputLengthError,
    RefusedError,
    StepLimitError,
)
from comal.messages import Finish, ToolResultPart
from comal.providers.scripted import ScriptedTurn
from tests.unit.recovery.conftest import Bench, call


def kinds(bench: Bench, session_id: str) -> list[str]:
    return [e.kind for e in bench.ledger.entries(session_id)]


def turn_kinds(bench: Bench, session_id: str) -> list[str]:
    """The entries of the turn: from the user's message on."""
    found = kinds(bench, session_id)
    return found[found.index("message.user") :]


async def test_a_text_answer_is_recorded_after_its_request(bench: Bench) -> None:
    s, provider = bench.open([ScriptedTurn(text="Hello there.", chunk_size=5)])
    assert await run_turn(s, "hi") == "Hello there."
    assert turn_kinds(bench, s.id) == ["message.user", "provider.request", "message.assistant"]
    (request,) = provider.requests
    assert request.messages[-1].text == "hi"
    assert [e.text for e in bench.events if isinstance(e, TextStreamed)] == [
        "Hello",
        " ther",
        "e.",
    ]
    started = [e for e in bench.events if isinstance(e, TurnStarted)]
    replied = [e for e in bench.events if isinstance(e, AssistantReplied)]
    assert [(e.step, e.output_reserve) for e in started] == [(1, request.max_output_tokens)]
    assert [(e.text, e.tool_calls, e.finish) for e in replied] == [("Hello there.", 0, "stop")]


async def test_tool_calls_run_write_ahead_and_their_results_go_back(bench: Bench) -> None:
    (bench.workspace / "notes.txt").write_text("remember the milk\n")
    s, provider = bench.open(
        [
            ScriptedTurn(text="Reading.", tool_calls=(call("c1", "Read", {"path": "notes.txt"}),)),
            "It says to remember the milk.",
        ]
    )
    assert await run_turn(s, "what do my notes say?") == "It says to remember the milk."
    assert turn_kinds(bench, s.id) == [
        "message.user",
        "provider.request",
        "message.assistant",
        "tool.started",
        "tool.result",
        "provider.request",
        "message.assistant",
    ]
    results = [p for m in provider.requests[1].messages for p in m.parts]
    (result,) = [p for p in results if isinstance(p, ToolResultPart)]
    assert (result.call_id, result.is_error, "remember the milk" in result.content) == (
        "c1",
        False,
        True,
    )
    finished = [e for e in bench.events if isinstance(e, ToolFinished)]
    assert [(e.call_id, e.status) for e in finished] == [("c1", "ok")]


async def test_a_reply_cut_at_the_output_limit_is_discarded_and_its_calls_never_run(
    bench: Bench,
) -> None:
    cut = ScriptedTurn(
        text="Writing",
        tool_calls=(call("c1", "Write", {"path": "out.txt", "content": "x"}),),
        finish=Finish.LENGTH,
    )
    s, provider = bench.open([cut, "Done, in fewer words."])
    # The request asked for all the output the window leaves beside this short context: the
    # model's maximum. Nothing larger exists, so the turn stops with OUTPUT_LENGTH (a cut below
    # the maximum is asked again larger: tests/unit/context/test_unfinished.py).
    with pytest.raises(OutputLengthError):
        await run_turn(s, "write it")
    assert "tool.started" not in kinds(bench, s.id)
    assert not (bench.workspace / "out.txt").exists()
    (discarded,) = bench.ledger.entries(s.id, kinds=("response.discarded",))
    (first,) = provider.requests
    assert discarded.payload["reason"] == "OUTPUT_LENGTH"
    assert discarded.payload["output_reserve"] == first.max_output_tokens
    assert first.max_output_tokens == s.engine.settings.max_output_tokens


async def test_one_context_length_refusal_per_turn_is_recovered(bench: Bench) -> None:
    too_long = ContextLengthError("prompt is too long", reported_tokens=50_000)
    s, provider = bench.open([ScriptedTurn(error=too_long), "Recovered."])
    assert await run_turn(s, "go") == "Recovered."
    assert turn_kinds(bench, s.id) == [
        "message.user",
        "provider.request",
        "provider.error",
        "context.calibrated",
        "provider.request",
        "message.assistant",
    ]
    (error,) = bench.ledger.entries(s.id, kinds=("provider.error",))
    (calibrated,) = bench.ledger.entries(s.id, kinds=("context.calibrated",))
    assert error.payload["code"] == "CONTEXT_LENGTH"
    assert (calibrated.payload["source"], calibrated.payload["measured_tokens"]) == (
        "context_length",
        50_000,
    )
    assert provider.remaining == 0


async def test_a_second_context_length_refusal_in_one_turn_is_raised(bench: Bench) -> None:
    s, _ = bench.open(
        [
            ScriptedTurn(error=ContextLengthError("too long")),
            ScriptedTurn(error=ContextLengthError("still too long")),
        ]
    )
    with pytest.raises(ContextLengthError, match="still too long"):
        await run_turn(s, "go")
    assert len(bench.ledger.entries(s.id, kinds=("provider.error",))) == 2


async def test_a_provider_error_is_recorded_then_raised(bench: Bench) -> None:
    s, _ = bench.open([ScriptedTurn(error=AuthError("bad key", status=401))])
    with pytest.raises(AuthError):
        await run_turn(s, "go")
    (error,) = bench.ledger.entries(s.id, kinds=("provider.error",))
    assert error.payload == {"code": "AUTH", "message": "bad key", "status": 401}
    assert "message.assistant" not in kinds(bench, s.id)


async def test_a_refusal_ends_the_turn_once_recorded_and_its_calls_never_run(
    bench: Bench,
) -> None:
    refusing = ScriptedTurn(
        refusal="I can't help with that.",
        tool_calls=(call("c1", "Bash", {"command": "touch ran.txt"}),),
    )
    s, _ = bench.open([refusing])
    with pytest.raises(RefusedError):
        await run_turn(s, "do the bad thing")
    (reply,) = bench.ledger.entries(s.id, kinds=("message.assistant",))
    refusal = reply.payload["refusal"]
    assert isinstance(refusal, dict)
    assert (refusal["text"], refusal["dropped_calls"]) == ("I can't help with that.", 1)
    assert "tool.started" not in kinds(bench, s.id)
    assert not (bench.workspace / "ran.txt").exists()
    assert [e.text for e in bench.events if isinstance(e, Refused)] == ["I can't help with that."]


async def test_the_turn_stops_after_max_turns_model_calls(bench: Bench) -> None:
    loop = [ScriptedTurn(tool_calls=(call(f"c{i}", "Glob", {"pattern": "*"}),)) for i in range(8)]
    s, provider = bench.open(loop)
    with pytest.raises(StepLimitError, match="all 8 model calls"):
        await run_turn(s, "look forever")
    assert provider.remaining == 0
    # The limit falls between pairs: every call made has its result.
    assert len(bench.ledger.entries(s.id, kinds=("tool.result",))) == 8


async def test_no_text_continues_from_the_ledger(bench: Bench) -> None:
    s, provider = bench.open(["First answer.", "Continued."])
    assert await run_turn(s, "start") == "First answer."
    assert await run_turn(s, None) == "Continued."
    assert [e.kind for e in bench.ledger.entries(s.id, kinds=("message.user",))] == ["message.user"]
    assert provider.requests[1].messages[-1].text == "First answer."


async def test_a_session_over_its_token_budget_stops_before_calling_the_model(
    bench: Bench,
) -> None:
    s, provider = bench.open(["unused"])
    s.options.max_tokens = 0
    with pytest.raises(BudgetError, match="budget"):
        await run_turn(s, "go")
    assert provider.requests == []
