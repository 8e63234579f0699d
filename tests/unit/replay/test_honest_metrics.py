"""The replay's yardstick can fail: own-ideal cost, strict reachability, no hindsight, verdict."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from comal.context.measure.budget import RESERVE_FLOOR
from comal.context.relief.evidence_names import INDEX_CALL
from comal.importers import parse_file
from comal.messages import JSONObject, Message, TextPart
from comal.replay.comal_policy import ComalPolicy
from comal.replay.metrics import aggregate, row
from comal.replay.policies import Budget, Decision, RawPolicy
from comal.replay.rendering import SegmentCache
from comal.replay.replayer import call_budgets, replay_policy, replay_transcript
from comal.replay.report import markdown_report, result_json, verdict
from comal.replay.transcript import Transcript, transcript_from, transcripts_from
from tests.unit.replay.test_metrics import BIG, session

TRAJECTORIES = (Path(__file__).parents[3] / "../shared/trajectories").resolve()


def shared(name: str) -> Path:
    path = TRAJECTORIES / name
    if not path.is_file():
        pytest.skip(f"shared trajectory not present at {path}")
    return path


def test_masking_pays_far_above_its_own_ideal_and_raw_exactly_its_own() -> None:
    path = shared("mini-swe-agent-v2_gpt-5-mini/django__django-11163.traj.json")
    (transcript,) = transcripts_from(parse_file(path))

    rows = replay_transcript(transcript, [32_000], ["raw", "masking-m10", "swe-agent-last5"])

    by_policy = {r["policy"]: r for r in rows}
    assert by_policy["raw"]["cost_vs_own_ideal"] == 1.0
    assert float(by_policy["masking-m10"]["cost_vs_own_ideal"]) > 1.5  # type: ignore[arg-type]
    assert float(by_policy["swe-agent-last5"]["cost_vs_own_ideal"]) > 1.5  # type: ignore[arg-type]


@dataclass
class IndexCheckpoint:
    """From call 2 on: only the newest result verbatim, older results named by `names`, plus
    the evidence index call (as a checkpoint prints it)."""

    system: str
    names: frozenset[int]
    name: str = "checkpoint-like"

    def decide(self, history: tuple[Message, ...], call_index: int, /) -> Decision:
        if call_index < 2:
            return Decision(history, self.system)
        note = Message("user", (TextPart(f"Evidence index: {INDEX_CALL}"),))
        return Decision(
            (history[0], note, *history[-2:]),
            self.system,
            reachable_refs=self.names,
            reachable_all=True,
        )


def test_a_checkpoint_that_names_some_outputs_reaches_only_those_strictly() -> None:
    outputs = ["alpha_one_fact\n", "beta_two_fact\n", "nothing\n"]
    replies = ["a", "b", "c", "uses alpha_one_fact and beta_two_fact"]
    transcript = session(outputs, replies)
    first = transcript.outputs[0].entry_index
    policy = IndexCheckpoint(transcript.system, frozenset({first}))

    totals = replay_policy(transcript, policy, BIG, SegmentCache())

    assert (totals.facts_total, totals.facts_in_view) == (2, 0)
    assert totals.facts_reachable == 1
    assert totals.facts_via_index == 2
    result = row(totals, session="s", source="x", policy="p", window=1, raw_cost=1, physical=1)
    assert result["facts_reachable"] == 0.5
    assert result["facts_reachable_via_index"] == 1.0


def _reserves(transcript: Transcript, policy_name: str, window: int) -> list[int]:
    cache = SegmentCache()
    budgets = call_budgets(transcript, window)
    if policy_name == "comal":
        comal = ComalPolicy(transcript, budgets, cache)
        try:
            return replay_policy(transcript, comal, budgets, cache).reserves
        finally:
            comal.close()
    return replay_policy(transcript, RawPolicy(transcript.system), budgets, cache).reserves


@pytest.mark.parametrize("policy_name", ["raw", "comal"])
def test_the_reserve_at_a_call_does_not_change_when_later_calls_are_deleted(
    policy_name: str,
) -> None:
    path = shared("mini-swe-agent-v2_gpt-5-mini/astropy__astropy-14369.traj.json")
    parsed = parse_file(path)
    whole = transcript_from(parsed)
    k = 8
    cut = whole.calls[k + 1].entries_end
    short = transcript_from(replace(parsed, entries=parsed.entries[:cut]))
    assert len(short.calls) == k + 1

    long_reserves = _reserves(whole, policy_name, 64_000)
    short_reserves = _reserves(short, policy_name, 64_000)

    assert short_reserves == long_reserves[: k + 1]
    # Larger outputs come later: a reserve sized from the whole session would be larger at k.
    assert long_reserves[k] < long_reserves[-1]


def _aggregate_row(policy: str, window: int, cost: float, view: int, overflows: int) -> JSONObject:
    return {
        "session": "s",
        "source": "src",
        "policy": policy,
        "window": window,
        "calls": 1,
        "cost_weighted": cost,
        "raw_cost_weighted": 100.0,
        "facts_total": 10,
        "facts_in_view_count": view,
        "overflows": overflows,
    }


def test_the_verdict_line_judges_only_overflow_free_peers_with_margins() -> None:
    rows = [
        _aggregate_row("raw", 32_000, 100.0, 10, 3),
        _aggregate_row("peer", 32_000, 50.0, 8, 0),
        _aggregate_row("comal", 32_000, 40.0, 9, 0),
        _aggregate_row("peer", 64_000, 50.0, 10, 0),
        _aggregate_row("comal", 64_000, 45.0, 9, 0),
    ]
    summary = aggregate(rows)

    assert verdict(summary, 32_000) == (True, ["peer cost -20.0 %, facts in view +10.0 pt"])
    assert verdict(summary, 64_000) == (False, ["peer cost -10.0 %, facts in view -10.0 pt"])
    report = markdown_report(summary)
    assert "- 32k: ahead of every overflow-free peer" in report
    assert "**yes**" in report.split("- 64k")[0]
    assert "**no**" in report.split("- 64k")[1]


def test_json_has_rows_aggregate_and_aggregate_by_source() -> None:
    rows = [
        {**_aggregate_row("comal", 32_000, 40.0, 9, 0), "source": "a"},
        {**_aggregate_row("comal", 32_000, 60.0, 5, 0), "source": "b"},
    ]
    doc = result_json(rows, aggregate(rows))

    assert set(doc) == {"split", "rows", "aggregate", "aggregate_by_source", "oracle_gap"}
    assert doc["split"] is None
    by_source = json.loads(json.dumps(doc["aggregate_by_source"]))
    assert [(a["source"], a["cost_weighted"]) for a in by_source] == [("a", 40.0), ("b", 60.0)]
    assert json.loads(json.dumps(doc["aggregate"]))[0]["cost_weighted"] == 100.0


def test_comal_holds_its_own_reserve_without_a_fixed_one() -> None:
    transcript = session(["a.py\n"], ["x", "y"])
    cache = SegmentCache()
    policy = ComalPolicy(transcript, Budget(64_000, 12_345, 4_000), cache)
    try:
        totals = replay_policy(transcript, policy, Budget(64_000, 12_345, 4_000), cache)
    finally:
        policy.close()

    # Before any reply the engine's default; then sized from the first reply's output, which
    # the recording left out (no usage) and the replay feeds at its rendered size: the floor.
    assert totals.reserves == [4_096, RESERVE_FLOOR]


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("mini-swe-agent_gemini-3-pro/django__django-11138.traj.json", "messages"),
        ("swe-agent_demos/pydicom__pydicom-1458.traj", "history"),
    ],
)
def test_a_text_action_session_costs_raw_what_its_messages_cost_as_sent(
    name: str, key: str
) -> None:
    path = shared(name)
    recorded = json.loads(path.read_text())[key]
    (transcript,) = transcripts_from(parse_file(path))
    cache = SegmentCache()

    totals = replay_policy(transcript, RawPolicy(transcript.system), BIG, cache)

    # The prompt of assistant message k is every recorded message before it, rendered once in
    # the canonical form (`<role>` … `</role>`), with nothing added: no second copy of the
    # command as a call, no status line after an observation.
    assistant_at = [i for i, m in enumerate(recorded) if m["role"] == "assistant"]
    as_sent = []
    for index in assistant_at:
        text = "".join(f"<{m['role']}>\n{m['content']}\n</{m['role']}>\n" for m in recorded[:index])
        as_sent.append(cache.count(text))
    assert totals.sizes == as_sent
    assert any(c.tool_calls for c in transcript.messages if c.role == "assistant")


def test_the_engine_sizes_the_same_reserve_the_harness_applies_to_the_peers() -> None:
    path = shared("mini-swe-agent-v2_gpt-5-mini/astropy__astropy-14369.traj.json")
    (transcript,) = transcripts_from(parse_file(path))

    engine = _reserves(transcript, "comal", 32_000)
    harness = list(call_budgets(transcript, 32_000).reserves)

    # Up to the first reply longer than the reserve the same rule holds; the engine then also
    # learns from the cut (it grows its reserve, as live), which the peers' reserve never sees.
    cut = next(
        (
            c.index
            for c in transcript.calls
            if (transcript.output_tokens(c) or 0) > harness[c.index]
        ),
        len(harness),
    )
    assert engine[:cut] == harness[:cut]
    assert all(e >= h for e, h in zip(engine, harness, strict=True))
    assert len(set(engine)) > 1
