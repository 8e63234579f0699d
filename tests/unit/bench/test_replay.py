"""The replay harness end to end: Comal's real engine, real files, the report outputs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from comal.bench import POLICIES, run_replay
from comal.bench.comal_policy import ComalPolicy
from comal.bench.policies import Budget, RawPolicy
from comal.bench.rendering import SegmentCache
from comal.bench.replay import replay_policy, replay_transcript, shared_budget
from comal.bench.report import markdown_table, write_json, write_png
from comal.bench.transcript import transcripts_from
from comal.context.budget import default_margin
from comal.importers import parse_file
from comal.messages import JSONObject
from tests.unit.bench.test_metrics import session

TRAJECTORIES = (Path(__file__).parents[3] / "../shared/trajectories").resolve()


def _trajectories() -> Path:
    if not TRAJECTORIES.is_dir():
        pytest.skip(f"shared trajectories not present at {TRAJECTORIES}")
    return TRAJECTORIES


def test_comal_without_pressure_sends_exactly_the_raw_history() -> None:
    transcript = session(["a.py\nb.py\n", "def frob():\n    return 41\n"], ["ls", "cat", "done"])
    budget = Budget(window=200_000, reserve=8_000, margin=default_margin(200_000))
    cache = SegmentCache()

    raw = replay_policy(transcript, RawPolicy(transcript.system), budget, cache)
    policy = ComalPolicy(transcript, budget, cache)
    try:
        comal = replay_policy(transcript, policy, budget, cache)
    finally:
        policy.close()

    assert comal.sizes == raw.sizes
    assert comal.cost() == raw.cost()
    assert comal.facts_in_view == raw.facts_in_view


def test_the_shared_reserve_is_sized_from_recorded_outputs() -> None:
    path = _trajectories() / "mini-swe-agent-v2_gpt-5-mini/django__django-11163.traj.json"
    transcript = transcripts_from(parse_file(path))[0]
    outputs: list[int] = []
    for entry in transcript.entries:
        usage = entry.payload.get("usage")
        if entry.kind == "message.assistant" and isinstance(usage, dict):
            value = usage.get("output")
            assert isinstance(value, int)
            outputs.append(value)
    outputs.sort()
    p95 = outputs[max(1, -(-95 * len(outputs) // 100)) - 1]

    budget = shared_budget(transcript, 64_000)

    assert budget.reserve == min(max(2 * p95, 4_096), 32_000)
    assert budget.margin == 4_000


def test_a_real_session_through_every_policy(tmp_path: Path) -> None:
    path = _trajectories() / "swe-agent_demos/pydicom__pydicom-1458.traj"
    (transcript,) = transcripts_from(parse_file(path))

    rows = replay_transcript(transcript, [32_000], ["raw", "masking-m10", "comal"])

    assert [r["policy"] for r in rows] == ["raw", "masking-m10", "comal"]
    assert all(r["calls"] == len(transcript.calls) for r in rows)
    assert rows[0]["ratio_raw"] == 1.0
    write_json(tmp_path / "r.json", rows, [])
    assert json.loads((tmp_path / "r.json").read_text())["rows"][2]["policy"] == "comal"


@pytest.mark.slow
@pytest.mark.replay
async def test_full_replay_of_the_shared_trajectories(tmp_path: Path) -> None:
    result = await run_replay([_trajectories()], [32_000, 64_000, 128_000], POLICIES, jobs=2)

    policies = {str(a["policy"]) for a in result.aggregate}
    assert policies == set(POLICIES)
    comal_32k = [r for r in result.rows if r["policy"] == "comal" and r["window"] == 32_000]
    assert len({r["session"] for r in comal_32k}) == len(comal_32k)
    for item in result.aggregate:
        assert float(item["cost_vs_own_ideal"]) >= 1.0  # type: ignore[arg-type]
        if item["policy"] == "raw":
            assert item["ratio_raw"] == 1.0
        if item["policy"] == "comal":
            assert item["summary_tokens"] == 0
            assert item["overflows"] == 0
    _assert_comal_ahead_of_every_peer_without_overflows(result.rows)
    table = markdown_table(result.aggregate)
    assert table.count("\n") == 2 + len(result.aggregate)
    write_png(tmp_path / "plot.png", result.aggregate)
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _assert_comal_ahead_of_every_peer_without_overflows(rows: Sequence[JSONObject]) -> None:
    """The replay's goal: at every window Comal never overflows, reaches every later-used
    fact, writes no summary, stays within 5 % of its own ideal cache, and is at least as cheap
    as, with at least as many facts in view as, every peer policy that does not overflow."""
    totals: dict[tuple[str, int], dict[str, float]] = {}
    for r in rows:
        key = (str(r["policy"]), int(r["window"]))  # type: ignore[arg-type]
        into = totals.setdefault(key, {})
        for field in (
            "cost_weighted",
            "ideal_cost_weighted",
            "overflows",
            "facts_total",
            "facts_in_view_count",
            "facts_reachable_count",
            "summary_tokens",
        ):
            into[field] = into.get(field, 0.0) + float(r[field])  # type: ignore[arg-type]
    for (policy, window), peer in totals.items():
        comal = totals[("comal", window)]
        if policy == "comal":
            assert comal["overflows"] == 0
            assert comal["summary_tokens"] == 0
            assert comal["facts_reachable_count"] == comal["facts_total"]
            assert comal["cost_weighted"] <= 1.05 * comal["ideal_cost_weighted"]
        elif peer["overflows"] == 0:
            assert comal["cost_weighted"] <= peer["cost_weighted"], (policy, window)
            assert comal["facts_in_view_count"] >= peer["facts_in_view_count"], (policy, window)
