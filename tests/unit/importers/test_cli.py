"""`comal import` and `comal bench replay` as a user runs them (the CLI in-process, real
ledger: only what the commands print, record and return is checked)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_support import run_cli
from tests.unit.importers.conftest import FIXTURES

ROLLOUT = next((FIXTURES / "codex").glob("rollout-*.jsonl"))


def comal(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


@pytest.mark.e2e
def test_import_prints_ids_and_the_session_shows(tmp_path: Path) -> None:
    done = comal("import", str(ROLLOUT), "--json")

    assert done.returncode == 0, done.stderr
    (session,) = json.loads(done.stdout)["sessions"]
    assert session["source"] == "import:codex"
    shown = comal("show", session["id"][:13])
    assert shown.returncode == 0, shown.stderr
    assert "frobnicate_widget" in shown.stdout


@pytest.mark.e2e
def test_import_of_a_malformed_file_fails_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "rollout-bad.jsonl"
    bad.write_text(ROLLOUT.read_text() + "{not json\n")
    lines = ROLLOUT.read_text().count("\n") + 1

    done = comal("import", str(ROLLOUT), str(bad))

    assert done.returncode == 2
    assert f"{bad}:{lines}: not JSON" in done.stderr
    listed = comal("sessions", "--json")
    assert json.loads(listed.stdout) == []


@pytest.mark.e2e
def test_bench_replay_writes_its_reports(tmp_path: Path) -> None:
    done = comal(
        "bench", "replay", str(ROLLOUT), "--window", "8k,16000", "--policy", "raw,comal",
        "--json", str(tmp_path / "r.json"), "--png", str(tmp_path / "r.png"),
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {(a["policy"], a["window"]) for a in doc["aggregate"]} == {
        ("raw", 8000), ("raw", 16000), ("comal", 8000), ("comal", 16000),
    }  # fmt: skip
    assert "| comal | 8k |" in done.stdout
    assert (tmp_path / "r.png").stat().st_size > 0


@pytest.mark.e2e
def test_context_of_an_imported_session_uses_its_models_catalog_window() -> None:
    done = comal("import", str(ROLLOUT), "--json")
    assert done.returncode == 0, done.stderr
    (session,) = json.loads(done.stdout)["sessions"]

    report = comal("context", session["id"], "--json")

    assert report.returncode == 0, report.stderr
    window = json.loads(report.stdout)["window"]
    assert window["source"] == "catalog"
    assert window["tokens"] > 45_000


@pytest.mark.e2e
def test_bench_replay_skips_an_unreadable_file_and_replays_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / ROLLOUT.name).write_bytes(ROLLOUT.read_bytes())
    corrupt = folder / "corrupt.jsonl"
    corrupt.write_text('{"type": "session_meta", "payload": {}}\n{not json\n')
    args = ("bench", "replay", str(folder), "--window", "16k", "--policy", "raw")

    done = comal(*args, "--json", str(tmp_path / "r.json"))

    assert done.returncode == 0, done.stderr
    assert f"skipped {corrupt}: IMPORT_FORMAT: {corrupt}:2: not JSON" in done.stderr
    assert "replayed 1 file(s)" in done.stderr
    assert "| raw | 16k |" in done.stdout
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert {r["session"] for r in rows} == {f"sessions/{ROLLOUT.stem}"}
    strict = comal(*args, "--strict")
    assert strict.returncode == 2
    assert "| raw | 16k |" in strict.stdout
    (folder / ROLLOUT.name).unlink()
    nothing = comal(*args)
    assert nothing.returncode == 2
    assert "no recorded session could be read" in nothing.stderr


@pytest.mark.e2e
def test_bench_replay_takes_the_cache_time_to_live_and_refuses_a_bad_one(tmp_path: Path) -> None:
    args = ("bench", "replay", str(ROLLOUT), "--window", "16k", "--policy", "raw")
    # The rollout's calls are seconds apart: a 1-second cache expires between them.
    short = comal(*args, "--cache-ttl", "1", "--json", str(tmp_path / "short.json"))
    never = comal(*args, "--cache-ttl", "none", "--json", str(tmp_path / "never.json"))
    assert short.returncode == never.returncode == 0, short.stderr + never.stderr
    (cold,) = json.loads((tmp_path / "short.json").read_text())["aggregate"]
    (warm,) = json.loads((tmp_path / "never.json").read_text())["aggregate"]
    assert cold["cold_calls"] > 0
    assert warm["cold_calls"] == 0
    assert cold["cost_weighted"] > warm["cost_weighted"]

    bad = comal(*args, "--cache-ttl", "-5")
    assert bad.returncode != 0
    assert "bad --cache-ttl '-5'" in bad.stderr
    assert "Traceback" not in bad.stderr
