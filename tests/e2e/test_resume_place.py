"""Resuming: tools run in the session's recorded cwd (or where `--cwd` explicitly moves it); a
finished session shown again needs no provider; a failed follow-up leaves the earlier answer
and status standing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal_here as comal
from tests.e2e.headless_support import configure, ledger_at

pytestmark = pytest.mark.e2e


def _write(name: str, call_id: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"id": call_id, "name": "Write", "arguments": {"path": name, "content": "here\n"}}
        ]
    }


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    first, other, home = tmp_path / "first", tmp_path / "other", tmp_path / "home"
    first.mkdir()
    other.mkdir()
    return first, other, home


def _answered(home: Path, server: FakeServer, first: Path, *others: Path) -> str:
    """The folders configured for `server`; a first run answered in `first`: its session."""
    for folder in (first, *others):
        configure(folder, server, "openai-chat")
    run = comal("-p", "start", "--output-format", "stream-json", cwd=first, env_home=home)
    assert run.code == 0, run.stderr
    return run.session_id()


def test_resume_runs_tools_in_the_recorded_cwd(dirs: tuple[Path, Path, Path]) -> None:
    first, other, home = dirs
    with FakeServer(["ready", _write("marker.txt", "w1"), "written"]) as server:
        sid = _answered(home, server, first, other)
        again = comal("--resume", sid, "-p", "write the marker", cwd=other, env_home=home)
    assert again.code == 0, again.stderr
    assert (first / "marker.txt").read_text() == "here\n"
    assert not (other / "marker.txt").exists()


def test_a_gone_cwd_is_refused_and_cwd_moves_the_session(dirs: tuple[Path, Path, Path]) -> None:
    first, other, home = dirs
    with FakeServer(["ready", _write("moved.txt", "w2"), "written"]) as server:
        sid = _answered(home, server, first, other)
        shutil.rmtree(first)
        refused = comal("--resume", sid, "-p", "go on", cwd=other, env_home=home)
        assert refused.code == 2
        assert "no longer exists" in refused.stderr
        assert "--cwd" in refused.stderr
        moved = comal(
            "--resume", sid, "-p", "write it", "--cwd", str(other), cwd=other, env_home=home
        )
    assert moved.code == 0, moved.stderr
    assert (other / "moved.txt").read_text() == "here\n"
    with ledger_at(home) as ledger:
        (move,) = ledger.entries(sid, kinds=("session.moved",))
    assert move.payload == {"from": str(first.resolve()), "to": str(other.resolve())}
    # Once moved, later resumes run there without being told again, and `--continue` in the
    # new folder finds the session.
    with FakeServer(["still here", "and here"]) as server:
        configure(other, server, "openai-chat")
        later = comal("--resume", sid, "-p", "and now?", cwd=other, env_home=home)
        assert later.code == 0, later.stderr
        continued = comal(
            "--continue", "-p", "again?", "--output-format", "stream-json", cwd=other, env_home=home
        )
    assert continued.code == 0, continued.stderr
    assert continued.session_id() == sid


def test_a_finished_session_is_shown_without_a_provider(dirs: tuple[Path, Path, Path]) -> None:
    first, _, home = dirs
    with FakeServer(["ready"]) as server:
        sid = _answered(home, server, first)
    with ledger_at(home) as ledger:
        ledger.append(sid, "session.finished", {"answer": "all done", "checks": []})
        ledger.set_status(sid, "finished")
    (first / ".comal" / "config.toml").unlink()  # no provider at all now
    shown = comal("--resume", sid, "-p", cwd=first, env_home=home)
    assert shown.code == 0, shown.stderr
    assert shown.stdout == "all done\n"
    assert "final answer: all done" in shown.stderr
    assert shown.stderr.rstrip().endswith("· finished")


def test_a_failed_follow_up_leaves_the_answer_and_status(dirs: tuple[Path, Path, Path]) -> None:
    first, _, home = dirs
    cut = {"text": "half of a", "cut_after_events": 3, "chunk_chars": 2}
    with FakeServer(["the first answer", cut, cut, cut]) as server:
        sid = _answered(home, server, first)
        with ledger_at(home) as ledger:
            before = ledger.session(sid).status
        failed = comal("--resume", sid, "-p", "more please", cwd=first, env_home=home)
    assert failed.code == 4, failed.stderr
    with ledger_at(home) as ledger:
        assert ledger.session(sid).status == before == "active"
        warnings = [e.payload for e in ledger.entries(sid, kinds=("warning",))]
        asks = ledger.entries(sid, kinds=("message.user",))
    assert warnings[-1]["turn"] == "failed"
    assert warnings[-1]["code"] == "NETWORK"
    assert len(asks) == 2  # the failed turn's ask is recorded
    state = comal("state", sid, "--json", cwd=first, env_home=home)
    assert '"status": "active"' in state.stdout
