"""Crash injection for child sessions in CI: WorkDraft and WorkStepRun coordinators SIGKILLed
at random points of their trees (at least 50 kills), each resumed to completion.

The full run with figures is `python -m perf.crash_children`; this holds the same harness
to the issue's targets: every coordinator resumed to completion, no fragment duplicated, no
write repeated, no finished child run again, no call left without a result in any session of
the tree, no request with an orphan call or result, no committed entry lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from perf.crash_children import run

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TRIALS = 32
KILLS_PER_TRIAL = 2


def test_work_draft_and_work_step_run_trees_killed_anywhere_resume_exactly(
    tmp_path: Path,
) -> None:
    summary = run(TRIALS, seed=20261201, directory=tmp_path, kills=KILLS_PER_TRIAL)

    assert summary.trials == TRIALS
    assert summary.kills >= 50  # the harness really kills
    assert summary.by_scenario == {"draft": TRIALS // 2, "step": TRIALS // 2}
    assert summary.failures == []
    assert summary.completed == TRIALS
    assert summary.duplicated_fragments == 0
    assert summary.repeated_writes == 0
    assert summary.rerun_children == 0
    assert summary.orphan_calls == 0
    assert summary.orphan_requests == 0
    assert summary.lost_entries == 0
