"""Crash injection in CI: 25 scripted sessions SIGKILLed at random points, resumed to the end.

The full run (≥ 200 trials, with figures) is `python -m perf.crash_injection`; this runs
the same harness with fewer trials and holds it to the same targets: every session resumed to
completion, no committed entry lost, no duplicated write, no request with an orphan tool call or
result.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from perf.crash_injection import run

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TRIALS = 25


def test_sessions_killed_at_random_points_resume_to_completion(tmp_path: Path) -> None:
    summary = run(TRIALS, seed=20240607, directory=tmp_path)

    assert summary.trials == TRIALS
    assert summary.kills >= TRIALS // 2  # the harness really kills
    assert summary.failures == []
    assert summary.completed == TRIALS
    assert summary.lost_entries == 0
    assert summary.duplicated_writes == 0
    assert summary.orphan_requests == 0
