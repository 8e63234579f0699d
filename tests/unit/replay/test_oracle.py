"""The oracle: Comal's schedule and landing sizes, with hindsight of what later calls use."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.replay.comal_policy import ComalPolicy
from comal.replay.facts import fact_uses
from comal.replay.metrics import Totals, aggregate
from comal.replay.oracle import OraclePolicy, schedule_of
from comal.replay.rendering import SegmentCache
from comal.replay.replayer import call_budgets, replay_policy, replay_transcript
from comal.replay.report import markdown_report, oracle_gap, result_json, verdict
from comal.replay.transcript import Transcript
from tests.unit.replay.generated import Step, build, step_lists


def _comal_then_oracle(transcript: Transcript, window: int) -> tuple[Totals, Totals]:
    cache = SegmentCache()
    budgets = call_budgets(transcript, window)
    comal = ComalPolicy(transcript, budgets, cache)
    try:
        ours = replay_policy(transcript, comal, budgets, cache)
    finally:
        comal.close()
    oracle = OraclePolicy(transcript, cache, schedule_of(ours.events), fact_uses(transcript))
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
