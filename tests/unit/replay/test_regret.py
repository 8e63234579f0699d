"""Event regret: the facts an event took out of view that the next 10 calls use."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.context.measure.budget import default_margin
from comal.messages import Message, ToolResultPart
from comal.replay.policies import Budget, Decision, RawPolicy, _replace_results
from comal.replay.regret import HORIZON
from comal.replay.rendering import SegmentCache
from comal.replay.replayer import call_budgets, replay_policy, replay_transcript
from comal.replay.report import explain_lines
from tests.unit.replay.generated import Step, build, output_text, step_lists


@given(step_lists(), st.sampled_from([8_000, 200_000]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_raw_without_overflows_has_no_event_and_no_regret(steps: list[Step], window: int) -> None:
    transcript = build(steps)
    cache = SegmentCache()
    budgets = call_budgets(transcript, window)

    totals = replay_policy(transcript, RawPolicy(transcript.system), budgets, cache)

    if totals.overflows == 0:
        assert totals.events == []
    # Raw only ever appends: with overflows too, no event and no regret.
    assert sum(e.regret for e in totals.events) == 0


@dataclass(slots=True)
class DropFirstOutput:
    """From call `at` on, the first tool output reads `[gone]` (one event, at `at`)."""

    system: str
    at: int
    name: str = "drop-first"

    def decide(self, history: tuple[Message, ...], call_index: int, /) -> Decision:
        if call_index < self.at:
            return Decision(history, self.system)

        def keep(_: int, part: ToolResultPart) -> str | None:
            return "[gone]" if part.call_id == "c0" else None

        return Decision(_replace_results(history, keep), self.system)


def test_an_event_is_charged_with_the_facts_the_next_calls_use() -> None:
    # Step 0's output introduces value_0_0_k and value_0_1_k. Replies of calls 4 and 6 write
    # value_0_0_k (inside the horizon of an event at call 3), call 3 + HORIZON writes
    # value_0_1_k (just past it): the event loses one fact the next calls use.
    steps = [Step((), 5) for _ in range(HORIZON + 6)]
    steps[4] = Step((0,), 5)
    steps[6] = Step((0,), 5)
    steps[3 + HORIZON] = Step((1,), 5)
    transcript = build(steps)
    assert "value_0_1_k" in output_text(0, 5)
    cache = SegmentCache()
    budget = Budget(window=200_000, reserve=0, margin=default_margin(200_000))

    totals = replay_policy(transcript, DropFirstOutput(transcript.system, at=3), budget, cache)

    (event,) = totals.events
    assert (event.call, event.trigger, event.lost) == (3, "rewrite", ("value_0_0_k",))
    assert event.before == totals.sizes[2]
    assert event.landing == totals.sizes[3]


def test_explain_prints_the_worst_events_with_trigger_sizes_and_facts() -> None:
    # Masking keeps the last 10 turns: step 0's output is masked once 11 replies follow it,
    # and a reply right after that writes its first identifier.
    steps = [Step((), 40) for _ in range(14)]
    steps[12] = Step((0,), 40)
    transcript = build(steps)

    rows = replay_transcript(transcript, [200_000], ["raw", "masking-m10"], name="gen/one")
    text = explain_lines(rows, "gen/one")

    masking = next(r for r in rows if r["policy"] == "masking-m10")
    listed = masking["event_list"]
    assert isinstance(listed, list)
    events = [e for e in listed if isinstance(e, dict)]
    worst = max(events, key=lambda e: int(str(e["regret"])))
    assert worst["lost"] == ["value_0_0_k"]
    assert masking["event_regret"] == sum(int(str(e["regret"])) for e in events)
    assert "- raw · 200k: 0 events, regret 0" in text
    before, landing = int(str(worst["before"])), int(str(worst["landing"]))
    assert (
        f"- masking-m10 · 200k · call {worst['call']} · mask · "
        f"{before:,} → {landing:,} tokens · regret 1: value_0_0_k"
    ) in text
    assert explain_lines(rows, "nothing") == "No replayed session is named like 'nothing'.\n"
    twice = rows + replay_transcript(transcript, [200_000], ["raw"], name="gen/one-again")
    assert "- gen/one-again · raw · 200k: 0 events, regret 0" in explain_lines(twice, "gen/one")
