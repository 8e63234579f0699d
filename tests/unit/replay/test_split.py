"""`comal bench replay --split A|B`: two halves of the files, the same on every machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from comal.replay.replayer import found_files, split_of
from comal.replay.runner import run_replay
from tests.unit.importers.conftest import FIXTURES

ROLLOUT = next((FIXTURES / "codex").glob("rollout-*.jsonl"))
NAMES = [f"agent-{n}/rollout-{n:02d}.jsonl" for n in range(12)]


def _tree(root: Path) -> Path:
    for name in NAMES:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROLLOUT, target)
    return root


def test_files_are_keyed_by_their_path_below_the_argument(tmp_path: Path) -> None:
    one = _tree(tmp_path / "checkout-one" / "set")
    two = _tree(tmp_path / "elsewhere" / "deeper" / "set")

    first = found_files([one])
    second = found_files([two])

    assert [key for _, key in first] == sorted(NAMES)
    assert [key for _, key in second] == [key for _, key in first]
    assert [split_of(key) for _, key in first] == [split_of(key) for _, key in second]
    # A file given by itself is keyed by its own name.
    assert found_files([one / NAMES[3]]) == [(one / NAMES[3], "rollout-03.jsonl")]


def test_the_halves_are_disjoint_and_cover_every_file(tmp_path: Path) -> None:
    halves = {name: split_of(name) for name in NAMES}

    assert set(halves.values()) == {"A", "B"}
    assert all(split_of(name) == half for name, half in halves.items())


async def test_run_replay_reads_only_the_chosen_half(tmp_path: Path) -> None:
    root = _tree(tmp_path / "set")
    wanted = {half: sorted(n for n in NAMES if split_of(n) == half) for half in ("A", "B")}

    results = {half: await run_replay([root], [16_000], ["raw"], split=half) for half in ("A", "B")}

    for half, result in results.items():
        assert result.split == half
        assert result.found == len(NAMES)
        assert result.files == len(wanted[half])
        sessions = sorted({str(r["session"]).split("/")[0] for r in result.rows})
        assert sessions == sorted({n.split("/")[0] for n in wanted[half]})


def test_the_cli_states_the_split_in_its_reports(tmp_path: Path) -> None:
    root = _tree(tmp_path / "set")
    count = sum(split_of(n) == "B" for n in NAMES)

    done = subprocess.run(
        [sys.executable, "-m", "comal", "bench", "replay", str(root), "--window", "16k",
         "--policy", "raw", "--split", "b", "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Split B: {count} of the {len(NAMES)} session files found")
    assert json.loads((tmp_path / "r.json").read_text())["split"] == "B"
    bad = subprocess.run(
        [sys.executable, "-m", "comal", "bench", "replay", str(root), "--split", "C"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode != 0
    assert "Traceback" not in bad.stderr


def test_files_no_importer_reads_are_listed_as_skipped_with_their_reason(tmp_path: Path) -> None:
    root = _tree(tmp_path / "set")
    (root / "README.md").write_text("# the set\n")
    (root / "manifest.jsonl").write_text('{"file": "agent-0/rollout-00.jsonl"}\n')
    (root / "agent-1" / "notes").write_text("kept by hand\n")

    done = subprocess.run(
        [sys.executable, "-m", "comal", "bench", "replay", str(root), "--window", "16k",
         "--policy", "raw", "--strict"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    skipped = sorted(line for line in done.stderr.splitlines() if line.startswith("skipped "))
    assert skipped == [
        f"skipped {root / 'README.md'}: no importer reads .md files",
        f"skipped {root / 'agent-1' / 'notes'}: no importer reads files without a suffix",
        f"skipped {root / 'manifest.jsonl'}: the set's manifest, not a recorded session",
    ]
    assert f"replayed {len(NAMES)} file(s)" in done.stderr
    assert "skipped 3 (3 that no importer reads)" in done.stderr
