"""Restore points and forks end to end: real `comal` processes on the loopback fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import Run, configure, ledger_at
from tests.e2e.headless_support import comal_here as comal

pytestmark = pytest.mark.e2e

FILES = ("a.txt", "b.txt", "c.txt")
State = dict[str, bytes | None]


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def _edit(call_id: str, path: str, old: str, new: str) -> dict[str, Any]:
    return _call(call_id, "Edit", path=path, edits=[{"old_string": old, "new_string": new}])


def _state(ws: Path) -> State:
    return {name: (ws / name).read_bytes() if (ws / name).exists() else None for name in FILES}


def _turns() -> list[Any]:
    """Three turns: write three files, edit them, edit them again (plus a Bash call)."""
    return [
        {
            "tool_calls": [
                _call("w1", "Write", path="a.txt", content="alpha 1\nshared\n"),
                _call("w2", "Write", path="b.txt", content="beta 1\n\x00binary\n"),
                _call("w3", "Write", path="c.txt", content="gamma 1\n"),
            ]
        },
        "Wrote three files.",
        {
            "tool_calls": [
                _edit("e1", "a.txt", "alpha 1", "alpha 2"),
                _edit("e2", "b.txt", "beta 1", "beta 2"),
                _edit("e3", "c.txt", "gamma 1", "gamma 2"),
            ]
        },
        "Edited them.",
        {
            "tool_calls": [
                _edit("f1", "a.txt", "shared", "shared again"),
                _edit("f2", "b.txt", "beta 2", "beta 3"),
                _edit("f3", "c.txt", "gamma 2", "gamma 3"),
                _call("f4", "Bash", command="echo side > d.txt"),
            ]
        },
        "Edited them again.",
    ]


def _ok(run: Run) -> Run:
    assert run.code == 0, run.stderr + run.stdout
    return run


def _scripted_session(ws: Path, home: Path, server: FakeServer) -> tuple[str, list[State]]:
    (ws / "c.txt").write_bytes(b"gamma before comal\n")
    states = [_state(ws)]
    configure(ws, server, "openai-chat")
    first = _ok(comal("-p", "write", "--output-format", "stream-json", cwd=ws, env_home=home))
    sid = first.session_id()
    states.append(_state(ws))
    for ask in ("edit", "edit again"):
        _ok(comal("--resume", sid, "-p", ask, cwd=ws, env_home=home))
        states.append(_state(ws))
    assert len({json.dumps({k: repr(v) for k, v in s.items()}) for s in states}) == 4
    return sid, states


def test_rewind_restores_every_file_byte_exact_at_each_turn(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    with FakeServer(_turns()) as server:
        sid, states = _scripted_session(ws, home, server)

    listing = _ok(comal("rewind", sid, cwd=ws, env_home=home)).stdout
    assert "changed " + str(ws / "a.txt") in listing
    assert "not restorable: Bash echo side > d.txt" in listing
    with ledger_at(home) as ledger:
        before = [e.id for e in ledger.entries(sid, own=True)]

    for turn in (3, 2, 1):
        run = _ok(comal("rewind", sid, "--to", str(turn), "--files-only", cwd=ws, env_home=home))
        assert _state(ws) == states[turn - 1], run.stdout
    assert "removed " + str(ws / "a.txt") in run.stdout
    assert (ws / "d.txt").exists()  # Bash's change is listed, never undone

    with ledger_at(home) as ledger:
        after = ledger.entries(sid, own=True)
        assert ledger.verify(sid).ok
    assert [e.id for e in after][: len(before)] == before  # nothing deleted
    rewinds = [e for e in after if e.kind == "session.rewound"]
    assert [e.payload["to"] for e in rewinds] == ["before turn 3", "before turn 2", "before turn 1"]
    assert all(e.payload["conversation"] is False for e in rewinds)

    # What a rewind replaced is kept as well: going to the point right after the first rewind
    # brings back the files it left.
    _ok(comal("rewind", sid, "--to", rewinds[0].id, "--files-only", cwd=ws, env_home=home))
    assert _state(ws) == states[2]


def test_a_file_changed_outside_refuses_without_force(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    with FakeServer(_turns()) as server:
        sid, states = _scripted_session(ws, home, server)
    (ws / "b.txt").write_bytes(b"beta 3\nchanged by hand\n")
    touched = _state(ws)

    refused = comal("rewind", sid, "--to", "2", cwd=ws, env_home=home)

    assert refused.code == 3  # a session error, as the README's table says
    assert "REWIND_REFUSED" in refused.stderr
    assert "b.txt: changed outside this session" in refused.stderr
    assert "+changed by hand" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert _state(ws) == touched  # nothing written
    with ledger_at(home) as ledger:
        assert not ledger.entries(sid, kinds=("session.rewound",))

    forced = _ok(comal("rewind", sid, "--to", "2", "--force", cwd=ws, env_home=home))
    assert "overwrote changes made outside" in forced.stdout
    assert _state(ws) == states[1]


def test_a_conversation_rewind_continues_from_the_point(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    with FakeServer([*_turns(), "Continued after the rewind."]) as server:
        sid, states = _scripted_session(ws, home, server)
        _ok(comal("rewind", sid, "--to", "3", cwd=ws, env_home=home))
        assert _state(ws) == states[2]
        _ok(comal("--resume", sid, "-p", "something else", cwd=ws, env_home=home))
        body = json.dumps(server.received[-1].body)
    assert "something else" in body
    assert "beta 2" in body  # turn 2's edit is still in the conversation
    assert "edit again" not in body
    assert "beta 3" not in body


def test_a_fork_at_a_middle_entry_continues_with_the_parents_history(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    script: list[Any] = [
        {"tool_calls": [_call("b1", "Bash", command="echo parent-evidence-42")]},
        "First answer.",
        "Second answer.",
        "Answer in the fork.",
    ]
    with FakeServer(script) as server:
        configure(ws, server, "openai-chat")
        first = _ok(
            comal("-p", "first ask", "--output-format", "stream-json", cwd=ws, env_home=home)
        )
        parent = first.session_id()
        _ok(comal("--resume", parent, "-p", "second ask", cwd=ws, env_home=home))
        with ledger_at(home) as ledger:
            parent_entries = ledger.entries(parent)
            point = next(
                e
                for e in parent_entries
                if e.kind == "message.assistant" and "First answer." in json.dumps(e.payload)
            )
            result = next(e for e in parent_entries if e.kind == "tool.result")
        forked = _ok(comal("fork", parent, "--at", point.id, "--json", cwd=ws, env_home=home))
        fork = json.loads(forked.stdout)["session"]
        _ok(comal("--resume", fork, "-p", "third ask", cwd=ws, env_home=home))
        body = json.dumps(server.received[-1].body)

    assert "first ask" in body
    assert "First answer." in body
    assert "parent-evidence-42" in body
    assert "second ask" not in body
    assert "Second answer." not in body
    assert "third ask" in body
    with ledger_at(home) as ledger:
        assert [e.id for e in ledger.entries(parent)] == [e.id for e in parent_entries]
        assert ledger.verify().ok
        own = ledger.entries(fork, own=True)
        assert own[0].kind == "session.forked"
        assert own[0].payload["through_entry"] == point.id
        assert not any(
            e.kind == "message.user" and "first ask" in json.dumps(e.payload) for e in own
        )  # linked, not copied
        assert ledger.session(fork).fork_of == parent

    with ledger_at(home) as ledger:
        parent_short, fork_short = ledger.short_id(parent), ledger.short_id(fork)
    sessions = _ok(comal("sessions", cwd=ws, env_home=home)).stdout
    lines = sessions.splitlines()
    parent_line = next(i for i, ln in enumerate(lines) if ln.startswith(parent_short))
    assert lines[parent_line + 1].lstrip().startswith("└─ " + fork_short)

    evidence = _ok(comal("evidence", fork, result.id, cwd=ws, env_home=home))
    assert "parent-evidence-42" in evidence.stdout
