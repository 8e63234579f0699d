"""Resume on a damaged ledger: real runs, real files, a real bit flipped in the file on disk.

An entry whose hash does not verify is never acted on: a completed Edit whose `tool.started`
lost a bit must not be run again (its call would otherwise look never started).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from comal.ledger import Entry
from comal.messages import canonical_json
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import Run, comal, configure, ledger_at

pytestmark = pytest.mark.e2e

EDIT = {"path": "counter.txt", "edits": [{"old_string": "count=1", "new_string": "count=11"}]}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The COMAL_HOME of the runs (the ledger lives there)."""
    return tmp_path / "home"


def no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stderr + run.stdout, run.stderr
    assert "UNEXPECTED" not in run.stderr, run.stderr


def checkpointed(db: Path) -> bytearray:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return bytearray(db.read_bytes())


def flip_in_entry(db: Path, entry: Entry, needle: bytes, bit: int) -> None:
    """Flip one bit of `needle` inside `entry`'s stored payload, in the file itself."""
    data = checkpointed(db)
    text = canonical_json(entry.payload).encode()
    at = data.find(text)
    assert at >= 0, "the payload is stored inline"
    assert data.find(text, at + 1) < 0, "the payload is stored once"
    inside = text.find(needle)
    assert inside >= 0
    data[at + inside + len(needle) - 1] ^= 1 << bit
    db.write_bytes(bytes(data))


def edit_session(workspace: Path, home: Path, server: FakeServer) -> tuple[str, list[Entry]]:
    (workspace / "counter.txt").write_text("count=1\n")
    configure(workspace, server, "openai-chat")
    first = comal(
        "-p", "bump the counter", "--output-format", "stream-json", cwd=workspace, env_home=home
    )
    assert first.code == 0, first.stderr
    assert (workspace / "counter.txt").read_text() == "count=11\n"
    sid = first.session_id()
    with ledger_at(home) as ledger:
        return sid, ledger.entries(sid)


def test_a_flipped_bit_in_a_completed_edit_does_not_run_it_again(
    workspace: Path, home: Path
) -> None:
    turns: list[str | dict[str, object]] = [
        {"tool_calls": [{"id": "c1", "name": "Edit", "arguments": EDIT}]},
        "bumped",
        "nothing more to do",
    ]
    with FakeServer(turns) as server:
        sid, entries = edit_session(workspace, home, server)
        response = next(e for e in entries if e.kind == "message.assistant")
        # "c1" -> "c3": the response now names a call that never started nor ended.
        flip_in_entry(home / "ledger.db", response, b'"call_id":"c1', bit=1)

        resumed = comal("--resume", sid, "-p", "go on", cwd=workspace, env_home=home)

    no_traceback(resumed)
    assert (workspace / "counter.txt").read_text() == "count=11\n"  # not edited twice
    assert "does not verify" in resumed.stderr
    with ledger_at(home) as ledger:
        after = ledger.entries(sid)
    results = [e.payload for e in after if e.kind == "tool.result" and e.seq > entries[-1].seq]
    assert [(r["call_id"], r["status"]) for r in results] == [("c3", "uncertain")]
    assert response.id in str(results[0]["observed"])


@pytest.mark.parametrize("bit", [7, 3], ids=["not-utf8", "not-json"])
def test_no_command_crashes_on_a_damaged_payload(workspace: Path, home: Path, bit: int) -> None:
    with FakeServer(["the answer", "again"]) as server:
        configure(workspace, server, "openai-chat")
        first = comal(
            "-p", "a question", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert first.code == 0, first.stderr
        sid = first.session_id()
        with ledger_at(home) as ledger:
            asked = next(e for e in ledger.entries(sid) if e.kind == "message.user")
        # bit 7 makes `q` a lone continuation byte (not UTF-8); bit 3 turns `"` into `*`.
        needle = b'"a q' if bit == 7 else b'"'
        flip_in_entry(home / "ledger.db", asked, needle, bit=bit)
        runs = {
            name: comal(*args, cwd=workspace, env_home=home)
            for name, args in {
                "sessions": ("sessions",),
                "show": ("show", sid),
                "state": ("state", sid),
                "resume": ("--resume", sid, "-p", "go on"),
            }.items()
        }
    for name, run in runs.items():
        no_traceback(run)
        assert run.code in (0, 3), (name, run.code, run.stderr)
    for name in ("show", "state", "resume"):
        assert runs[name].code == 3, (name, runs[name].stderr)
        assert "LEDGER_DAMAGED" in runs[name].stderr, runs[name].stderr
        assert f"entry {asked.id} (seq {asked.seq}) is damaged" in runs[name].stderr
    listed = runs["sessions"].stdout.splitlines()
    assert len(listed) == 2, listed
    assert listed[1].split()[2] == "damaged", listed
