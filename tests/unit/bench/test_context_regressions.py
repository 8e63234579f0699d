"""Shared sessions where the engine once lost facts at a checkpoint, replayed through it now."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.bench.replay import replay_transcript
from comal.bench.transcript import transcripts_from
from comal.importers import parse_file

TRAJECTORIES = (Path(__file__).parents[3] / "../shared/trajectories").resolve()


def _session(name: str) -> Path:
    path = TRAJECTORIES / name
    if not path.is_file():
        pytest.skip(f"shared trajectory not present at {path}")
    return path


def test_facts_read_just_before_a_checkpoint_stay_in_view_or_named() -> None:
    # At 32k this session derives a checkpoint right after reading the files its next calls
    # quote. The engine with a fixed 8k horizon and an evidence list of only the newest turn
    # kept 59 of its 66 later-used facts in view and named 65 by reference; the tail sized by
    # the landing rule, with large outputs by reference, keeps them in view, and the
    # checkpoint names every earlier output by an exact reference.
    path = _session("mini-swe-agent_gemini-3-pro/sphinx-doc__sphinx-8593.traj.json")
    (transcript,) = transcripts_from(parse_file(path))
    rows = replay_transcript(transcript, [32_000], ["llm-compaction-80", "comal"])
    peer, comal = rows
    assert comal["policy"] == "comal"
    assert comal["derivations"] >= 1  # type: ignore[operator]
    assert comal["overflows"] == 0
    total = comal["facts_total"]
    assert comal["facts_reachable_count"] == total
    assert comal["facts_in_view_count"] >= peer["facts_in_view_count"]  # type: ignore[operator]
    assert comal["facts_in_view_count"] > 59  # type: ignore[operator]
