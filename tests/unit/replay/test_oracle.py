"""The oracle: Comal's schedule and landing sizes, with hindsight of what later calls use."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.importers.plan import ParsedSession, SessionPlan
from comal.messages import Message, TextPart, ToolCallPart
from comal.replay.comal_policy import ComalPolicy
from comal.replay.facts import fact_uses
from comal.replay.metrics import Totals, aggregate
from comal.replay.oracle import OraclePolicy, schedule_of, stub
from comal.replay.rendering import SegmentCache, request_tokens
from comal.replay.replayer import call_budgets, check_pairs, replay_policy, replay_transcript
from comal.replay.report import markdown_report, oracle_gap, result_json, verdict
from comal.replay.transcript import Transcript, transcript_from
from comal.usage import Usage
from tests.unit.replay.generated import Step, build, step_lists


def _comal_then_oracle(transcript: Transcript, window: int) -> tuple[Totals, Totals]:
    cache = SegmentCache()
    budgets = call_budgets(transcript, window)
    comal = ComalPolicy(transcript, budgets, cache)
    try:
        ours = replay_policy(transcript, comal, budgets, cache)
    finally:
        comal.close()
    schedule = schedule_of(ours.events)
    oracle = OraclePolicy(transcript, cache, schedule, fact_uses(transcript), tuple(ours.sizes))
    return ours, replay_policy(transcript, oracle, budgets, cache)


@given(step_lists(max_steps=14), st.sampled_from([6_000, 9_000, 14_000]))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_oracle_never_keeps_fewer_facts_in_view_than_comal(
    steps: list[Step], window: int
) -> None:
    transcript = build(steps)
    ours, limit = _comal_then_oracle(transcript, window)

    # It rewrites only where Comal did (a landing that merely stubs what was never shown
    # is an append, no event).
    assert {e.call for e in limit.events} <= {e.call for e in ours.events}
    for event in ours.events:
        assert limit.sizes[event.call] <= event.landing
    # Never larger than Comal's request, so it overflows only where Comal does.
    assert all(o <= c for o, c in zip(limit.sizes, ours.sizes, strict=True))
    assert limit.overflows <= ours.overflows
    assert limit.facts_total == ours.facts_total
    assert limit.facts_in_view >= ours.facts_in_view


def test_at_an_event_the_oracle_keeps_the_output_a_later_call_uses() -> None:
    # Twelve large outputs; the last reply writes the identifiers of step 2's output, long
    # before the window's tail: the oracle keeps them where Comal's checkpoint need not.
    steps = [Step((), 150) for _ in range(12)]
    steps[11] = Step((4, 5), 150)
    transcript = build(steps)

    ours, limit = _comal_then_oracle(transcript, 9_000)

    assert ours.events
    assert limit.facts_in_view == limit.facts_total
    assert limit.facts_in_view >= ours.facts_in_view


def test_the_report_gives_comal_s_gap_to_the_oracle_and_judges_no_peer_by_it() -> None:
    steps = [Step((), 150) for _ in range(12)]
    steps[11] = Step((4, 5), 150)
    transcript = build(steps)

    rows = replay_transcript(transcript, [9_000], ["comal", "oracle"], name="gen/two")
    totals = aggregate(rows)

    (gap,) = oracle_gap(totals)
    by_policy = {str(a["policy"]): a for a in totals}
    comal, oracle = by_policy["comal"], by_policy["oracle"]
    points = 100 * (float(str(comal["facts_in_view"])) - float(str(oracle["facts_in_view"])))
    dearer = float(str(comal["cost_weighted"])) / float(str(oracle["cost_weighted"])) - 1
    assert gap == {
        "window": 9_000,
        "facts_in_view_points": round(points, 2),
        "cost_percent": round(100 * dearer, 2),
    }
    judged = verdict(totals, 9_000)
    assert judged is not None
    assert not any(m.startswith("oracle") for m in judged[1])
    assert "gap to the oracle: facts in view" in markdown_report(totals)
    assert result_json(rows, totals)["oracle_gap"] == [gap]
    assert [r["policy"] for r in rows] == ["comal", "oracle"]


def test_a_landing_too_small_for_the_useful_turns_keeps_the_task_and_the_newest_turn() -> None:
    # Every reply uses facts of earlier outputs, so every old turn is useful; a landing of a
    # single token leaves only what is never dropped, pairs intact.
    steps = [Step((2 * max(n - 1, 0),), 40) for n in range(8)]
    transcript = build(steps)
    cache = SegmentCache()
    call = transcript.calls[7]
    oracle = OraclePolicy(transcript, cache, {}, fact_uses(transcript))

    view = oracle.land(transcript.history(call), call.index, 1)

    history = transcript.history(call)
    assert view[0] == history[0]
    assert [m.role for m in view[1:]] == ["assistant", "user"]
    assert view[1] == history[-2]
    check_pairs(view, policy="oracle", label="generated", call=call.index)


def test_a_fact_held_by_a_turn_that_left_and_by_one_that_stayed_is_kept_from_the_latter() -> None:
    plan = SessionPlan(Path("two.json"), "openai-chat")
    plan.user_text("Find the flag.")
    for number in range(7):
        found = "flag_name_x = 1\n" if number in (0, 6) else ""
        call = ToolCallPart(f"c{number}", "bash", {"command": f"look {number}"})
        plan.assistant((call,), model="m", finish="tool_calls", usage=Usage(), usage_raw=None)
        plan.tool_result(f"c{number}", (found + "filler line\n" * 30).encode(), line=None)
    plan.assistant(
        (TextPart("It is flag_name_x."),), model="m", finish="stop", usage=Usage(),
        usage_raw=None,
    )  # fmt: skip
    parsed = ParsedSession("two", "two.json", "two", "", "", "m", "You look.", plan.done())
    transcript = transcript_from(parsed)
    (use,) = fact_uses(transcript)
    assert len(use.sources) == 2
    last = transcript.calls[-1]
    history = transcript.history(last)
    (part,) = history[-1].tool_results
    excerpt = Message("user", (replace(part, content=stub(part) + "\nflag_name_x = 1"),))
    wanted = (history[0], history[-2], excerpt)
    cache = SegmentCache()
    oracle = OraclePolicy(transcript, cache, {}, fact_uses(transcript))
    room = request_tokens(cache.request(transcript.system, wanted))

    view = oracle.land(history, last.index, room)

    # The first output's turn left (the stubs of every turn did not fit); the newest output
    # holds the fact too: its line is kept there.
    assert view == wanted
