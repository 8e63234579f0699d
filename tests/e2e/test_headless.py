"""`comal -p` end to end: a real subprocess against the loopback fake server, for every wire."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from comal.messages import digest_bytes
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import WIRES, configure, ledger_at
from tests.e2e.headless_support import comal_here as comal

pytestmark = pytest.mark.e2e


def kinds(home: Path, session_id: str) -> list[str]:
    with ledger_at(home) as ledger:
        return [e.kind for e in ledger.entries(session_id)]


@pytest.mark.parametrize("wire", WIRES)
def test_text_answer(wire: str, workspace: Path, home: Path) -> None:
    with FakeServer(["The answer is 42."]) as server:
        configure(workspace, server, wire)
        run = comal("-p", "what is the answer?", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert "The answer is 42." in run.stdout
        assert server.stats().requests == 1
        body = server.received[0].body
    assert "what is the answer?" in str(body)
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        assert ledger.verify(info.id).ok
        assert "message.assistant" in [e.kind for e in ledger.entries(info.id)]


@pytest.mark.parametrize("wire", WIRES)
def test_multi_step_task_edits_real_files(wire: str, workspace: Path, home: Path) -> None:
    (workspace / "app.py").write_text("def greet():\n    return 'helo'\n")
    turns: list[Any] = [
        {"tool_calls": [{"id": "c1", "name": "Read", "arguments": {"path": "app.py"}}]},
        {
            "tool_calls": [
                {
                    "id": "c2",
                    "name": "Edit",
                    "arguments": {
                        "path": "app.py",
                        "edits": [{"old_string": "'helo'", "new_string": "'hello'"}],
                    },
                }
            ]
        },
        {
            "tool_calls": [
                {"id": "c3", "name": "Write", "arguments": {"path": "NOTES.md", "content": "ok\n"}}
            ]
        },
        {"tool_calls": [{"id": "c4", "name": "Bash", "arguments": {"command": "cat app.py"}}]},
        "Fixed the typo.",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, wire)
        run = comal(
            "-p", "fix the typo", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr
        stats = server.stats()
        assert stats.requests == 5
        assert stats.orphan_violations == 0
        last = str(server.received[-1].body)
    assert (workspace / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    assert (workspace / "NOTES.md").read_text() == "ok\n"
    assert "return 'hello'" in last
    events = run.events()
    assert [e["name"] for e in events if e["type"] == "tool_finished"] == [
        "Read",
        "Edit",
        "Write",
        "Bash",
    ]
    assert events[-1]["type"] == "finished"
    assert events[-1]["steps"] == 5
    sid = run.session_id()
    with ledger_at(home) as ledger:
        started = [e for e in ledger.entries(sid) if e.kind == "tool.started"]
        prep = started[1].payload["preparation"]
        assert isinstance(prep, dict)
        assert prep["digest_intended"] == digest_bytes((workspace / "app.py").read_bytes())


@pytest.mark.parametrize("wire", WIRES)
def test_parallel_tool_calls(wire: str, workspace: Path, home: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    turns: list[Any] = [
        {
            "tool_calls": [
                {"id": "p1", "name": "Read", "arguments": {"path": "a.txt"}},
                {"id": "p2", "name": "Read", "arguments": {"path": "b.txt"}},
            ]
        },
        "Both read.",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, wire)
        run = comal("-p", "read both", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert server.stats().orphan_violations == 0
        second = str(server.received[1].body)
    assert "alpha" in second
    assert "beta" in second


@pytest.mark.parametrize("wire", WIRES)
def test_output_length_runs_nothing_and_retries_with_larger_reserve(
    wire: str, workspace: Path, home: Path
) -> None:
    # Five reads fill more than half of what a 16,000-token window leaves beside the fixed
    # parts, so the cut reply had only what the window left beside them (less than the model's
    # maximum output); the retry relieves the context and asks for more.
    reads = []
    for k in range(5):
        (workspace / f"part{k}.txt").write_text(
            "".join(
                f"part {k} line {i}: value {i * k} checksum {i * 7919 % 1000}\n" for i in range(100)
            )
        )
        reads.append(
            {"tool_calls": [{"id": f"r{k}", "name": "Read", "arguments": {"path": f"part{k}.txt"}}]}
        )
    cut = {
        "tool_calls": [
            {"id": "w1", "name": "Write", "raw_arguments": '{"path": "x.txt", "content": "par'}
        ],
        "finish": "length",
    }
    done = {
        "tool_calls": [
            {"id": "w2", "name": "Write", "arguments": {"path": "y.txt", "content": "full\n"}}
        ]
    }
    with FakeServer([*reads, cut, done, "Written."], max_output=32_768) as server:
        configure(workspace, server, wire)
        run = comal(
            "-p",
            "write it",
            "--context-window",
            "16000",
            "--output-format",
            "stream-json",
            cwd=workspace,
            env_home=home,
        )
        assert run.code == 0, run.stderr
        assert server.stats().orphan_violations == 0
    assert not (workspace / "x.txt").exists()
    assert (workspace / "y.txt").read_text() == "full\n"
    sid = run.session_id()
    with ledger_at(home) as ledger:
        entries = ledger.entries(sid)
        reserves = [e.payload["output_reserve"] for e in entries if e.kind == "provider.request"]
        discarded = [e for e in entries if e.kind == "response.discarded"]
        started = [e.payload["call_id"] for e in entries if e.kind == "tool.started"]
        relieved = [e for e in entries if e.kind in ("projection", "checkpoint")]
    assert len(discarded) == 1
    assert discarded[0].payload["reason"] == "OUTPUT_LENGTH"
    # The cut request asked for all the window left; the retry, after relief, for more.
    cut_at, retry_at = reserves[5], reserves[6]
    assert isinstance(cut_at, int)
    assert isinstance(retry_at, int)
    assert discarded[0].payload["output_reserve"] == cut_at
    assert retry_at > cut_at
    assert relieved
    assert started == ["r0", "r1", "r2", "r3", "r4", "w2"]
    assert any(e["type"] == "response_discarded" for e in run.events())


def test_output_length_with_no_larger_reserve_is_a_clear_error(workspace: Path, home: Path) -> None:
    cut = {"text": "very long", "finish": "length"}
    with FakeServer([cut, cut, cut, cut, cut, cut]) as server:
        configure(workspace, server, "openai-chat", max_output_tokens=1024)
        run = comal("-p", "go", "--max-output-tokens", "1024", cwd=workspace, env_home=home)
    assert run.code != 0
    assert "OUTPUT_LENGTH" in run.stderr


@pytest.mark.parametrize("wire", WIRES)
def test_rate_limit_then_success(wire: str, workspace: Path, home: Path) -> None:
    with FakeServer([{"error": "rate_limit", "retry_after": 0}, "Recovered."]) as server:
        configure(workspace, server, wire)
        run = comal("-p", "hi", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert server.stats().requests == 2
    assert "Recovered." in run.stdout


@pytest.mark.parametrize("wire", WIRES)
def test_stream_cut_is_a_clear_error_and_the_session_resumes(
    wire: str, workspace: Path, home: Path
) -> None:
    cut = {"text": "I am halfway through a long sentence", "cut_after_events": 9, "chunk_chars": 2}
    with FakeServer([cut]) as server:
        configure(workspace, server, wire)
        run = comal("-p", "talk", "--output-format", "stream-json", cwd=workspace, env_home=home)
        assert run.code == 4, run.stderr
        failed = [e for e in run.events() if e["type"] == "failed"]
        assert failed
        assert failed[0]["code"] == "NETWORK"
        sid = run.session_id()
        assert comal("verify", sid, cwd=workspace, env_home=home).code == 0
        server.add_turns("Finished after resume.")
        again = comal("--resume", sid, "-p", "please finish", cwd=workspace, env_home=home)
        assert again.code == 0, again.stderr
        assert "Finished after resume." in again.stdout
        assert server.stats().orphan_violations == 0


def test_write_outside_workspace_is_denied_headless(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside" / "evil.txt"
    turns: list[Any] = [
        {
            "tool_calls": [
                {"id": "o1", "name": "Write", "arguments": {"path": str(outside), "content": "x"}}
            ]
        },
        "Could not write there.",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        run = comal(
            "-p", "write outside", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr
        assert "permission denied" in str(server.received[1].body)
    assert not outside.exists()
    finished = [e for e in run.events() if e["type"] == "tool_finished"]
    assert finished[0]["status"] == "denied"
    with ledger_at(home) as ledger:
        started = ledger.entries(run.session_id(), kinds=("tool.started",))
        permission = started[0].payload["permission"]
        assert isinstance(permission, dict)
        assert permission["decision"] != "allow"


def test_binary_tool_output_is_stored_exactly(workspace: Path, home: Path) -> None:
    raw = b"\xff\xfe\x00abc\x80"
    command = "printf '\\377\\376\\000abc\\200'"
    turns: list[Any] = [
        {"tool_calls": [{"id": "b1", "name": "Bash", "arguments": {"command": command}}]},
        "Done.",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "binary", "--output-format", "stream-json", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        sent = str(server.received[1].body)
    assert "not valid UTF-8" in sent
    with ledger_at(home) as ledger:
        (result,) = ledger.entries(run.session_id(), kinds=("tool.result",))
        assert ledger.body(result) == raw


def test_demo_runs_to_completion(tmp_path: Path, home: Path) -> None:
    run = comal("demo", cwd=tmp_path, env_home=home, timeout=120)
    assert run.code == 0, run.stderr
    assert "SCRIPTED" in run.stderr
    assert "All 4 tests pass" in run.stdout
    assert "status: finished" in run.stdout
    # The window forces a checkpoint mid-plan; the plan goes on from what the checkpoint keeps
    # (board, files, commands, the report's reference) instead of starting over.
    shown_all = run.stdout + run.stderr
    assert "context: checkpoint #1" in shown_all
    assert shown_all.count("I'll plan this as small criteria") == 1
    assert shown_all.count("→ Bash python tools/report.py") == 1
    # The report is read back by the exact reference the checkpoint's work state gives it.
    assert re.search(r"→ EvidenceRead E[1-9][0-9]*\n", shown_all)
    sid = run.stdout.split("session: ")[1].split()[0]
    shown = comal("show", sid, cwd=tmp_path, env_home=home)
    assert shown.code == 0
    assert "python -m unittest" in shown.stdout
    names = kinds(home, sid)
    assert "tool.result" in names
    assert names.count("message.assistant") >= 7


def test_no_provider_is_a_clear_error(workspace: Path, home: Path) -> None:
    run = comal("-p", "hello", cwd=workspace, env_home=home)
    assert run.code == 2
    assert "no model provider is configured" in run.stderr
    assert "comal demo" in run.stderr


def test_task_from_stdin_and_json_output(workspace: Path, home: Path) -> None:
    with FakeServer(["Read from stdin."]) as server:
        configure(workspace, server, "openai-chat")
        run = comal(
            "-p", "--output-format", "json", cwd=workspace, env_home=home, stdin="task on stdin\n"
        )
        assert "task on stdin" in str(server.received[0].body)
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["answer"] == "Read from stdin."
    assert result["status"] == "answered"
    assert result["error"] is None
