"""Shared sessions where the engine once lost facts at a checkpoint, replayed through it now."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.importers import parse_file
from comal.replay.replayer import replay_transcript
from comal.replay.transcript import transcripts_from

TRAJECTORIES = (Path(__file__).parents[3] / "../shared/trajectories").resolve()


def _session(name: str) -> Path:
    path = TRAJECTORIES / name
    if not path.is_file():
        pytest.skip(f"shared trajectory not present at {path}")
    return path


def test_facts_read_before_a_checkpoint_stay_in_view_or_named() -> None:
    # At 32k this Claude Code session derives checkpoints while its next calls still quote
    # outputs read just before. The engine whose checkpoint named only the newest turn's
    # outputs left 8 of its 91 later-used facts neither in view nor named by their own
    # reference; naming every earlier output by an exact reference reaches all of them.
    path = _session("claude-code_vsla/d7d349f9-c243-46e2-9a32-4a0eddfc634b.jsonl")
    (transcript,) = transcripts_from(parse_file(path))
    rows = replay_transcript(transcript, [32_000], ["llm-compaction-80", "comal"])
    peer, comal = rows
    assert comal["policy"] == "comal"
    assert comal["derivations"] >= 1  # type: ignore[operator]
    assert comal["overflows"] == 0
    assert comal["facts_reachable_count"] == comal["facts_total"]
    assert comal["facts_in_view_count"] >= peer["facts_in_view_count"]  # type: ignore[operator]


@pytest.mark.replay
def test_a_large_file_read_early_stays_in_view_when_the_window_has_room() -> None:
    # A Claude Code 2.x session at 128k: its first call reads a 57 KB Go file whose names
    # (ErrBranchNotFound, GetWorktreePath…) the agent uses a hundred calls later, and its
    # checkpoint lands while the PR-review loop still quotes files it just read. The engine
    # that previewed every output over 20 KiB and landed the checkpoint at 9.5k tokens kept
    # 94 of 106 later-used facts in view, 5 fewer than a summarizing peer; whole entry within
    # the window's share and a landing that keeps the working set keep at least the peer's.
    path = _session("claude-code-2_entire/545b45d4-729e-4d0b-8e6b-45cb65d43f00.jsonl")
    (transcript,) = transcripts_from(parse_file(path))
    peer, comal = replay_transcript(transcript, [128_000], ["llm-compaction-80", "comal"])
    assert comal["policy"] == "comal"
    assert comal["derivations"] >= 1  # type: ignore[operator]
    assert comal["overflows"] == 0
    assert comal["facts_reachable_count"] == comal["facts_total"]
    assert comal["facts_in_view_count"] >= peer["facts_in_view_count"]  # type: ignore[operator]
