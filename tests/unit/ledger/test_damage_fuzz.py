"""Damaged ledger files: random byte flips and truncations never raise anything but a named
error; every damaged file is reported; salvage keeps every intact entry and forges none.

The default suite runs a short sample; the slow suite runs the 10,000 trials whose counts are
in docs/benchmarks.md (`python -m perf.ledger_fuzz --trials 10000 --seed 1`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from perf.ledger_fuzz import run


def _check(trials: int, seed: int, folder: Path) -> None:
    counts = run(trials, seed, folder)
    failures = {key: value for key, value in counts.items() if key.startswith("fail_") and value}
    assert failures == {}
    assert counts["flip"] + counts["truncation"] == trials
    assert counts["reported_damaged"] > 0
    assert counts["entries_salvaged"] >= counts["entries_intact"] > 0


def test_a_sample_of_damaged_files(tmp_path: Path) -> None:
    _check(25, 7, tmp_path)


@pytest.mark.slow
def test_ten_thousand_damaged_files(tmp_path: Path) -> None:
    _check(10_000, 1, tmp_path)
