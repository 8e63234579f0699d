"""Write tests/fixtures/ledgers/sessions.db: a small ledger holding every entry kind Comal writes.

Runs `python -m comal` against the loopback fake server (tools, a board, finish_call, hooks, a
provider error, a cut reply, pressure relief, a child session, compaction, a rewind, a fork, a
resume into another workspace and an import), so the file is exactly what the code of the day
records. tests/unit/test_ledger_fixture.py reads it back through the records and the readers;
regenerate it only when an entry kind is added (then record the new expectations too):

    .venv/bin/python scripts/make_ledger_fixture.py
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.headless_support import Run, comal, configure, ledger_at  # noqa: E402

from comal.testing.fake_server import FakeServer  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "ledgers" / "sessions.db"
CODEX = next((ROOT / "tests" / "fixtures" / "codex").glob("*.jsonl"))


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def _ok(run: Run) -> Run:
    if run.code != 0:
        raise SystemExit(f"comal failed ({run.code}):\n{run.stderr}\n{run.stdout[-2000:]}")
    return run


def _tools_session(ws: Path, home: Path) -> str:
    """Tools, board, finish, hooks, an error, a cut reply, compaction, rewind, fork, a move."""
    first: list[Any] = [
        {
            "tool_calls": [
                _call("w1", "Write", path="a.txt", content="alpha 1\n"),
                _call("b1", "Board", set=[{"id": "1", "text": "a.txt says alpha 2"}]),
                _call("x1", "Bash", command="echo hello"),
            ]
        },
        {"tool_calls": [_call("r1", "Read", path="a.txt"), _call("g1", "Glob", pattern="*")]},
        {
            "tool_calls": [
                _call(
                    "e1",
                    "Edit",
                    path="a.txt",
                    edits=[{"old_string": "alpha 1", "new_string": "alpha 2"}],
                )
            ]
        },
        {"tool_calls": [_call("bad", "Read", raw_arguments="{not json")]},
        {"tool_calls": [_call("b2", "Board", update=[{"id": "1", "status": "done"}])]},
        {"tool_calls": [_call("m1", "mcp__calc__add", a=40, b=2)]},
        {"tool_calls": [_call("f1", "finish_call", answer="a.txt says alpha 2")]},
        "Done.",
    ]
    with FakeServer(first) as server:
        configure(ws, server, "openai-chat")
        with (ws / ".comal" / "config.toml").open("a") as fh:
            fh.write('\n[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "true"\n')
            fh.write("\n[mcp_servers.calc]\ncommand = " + json.dumps(sys.executable) + "\n")
            fh.write('args = ["-m", "comal.testing.mcp_server"]\n')
        run = _ok(
            comal("-p", "write a.txt", "--output-format", "stream-json", cwd=ws, env_home=home)
        )
    sid = run.session_id()
    with FakeServer([{"error": "auth"}]) as server:
        configure(ws, server, "openai-chat")
        comal("--resume", sid, "-p", "again", cwd=ws, env_home=home)
    with FakeServer([{"text": "half a reply", "finish": "length"}]) as server:
        configure(ws, server, "openai-chat")
        comal("--resume", sid, "-p", "once more", cwd=ws, env_home=home)
    comal("compact", sid, cwd=ws, env_home=home)  # refused here: compact.cancelled
    moved = ws.parent / "moved"
    shutil.copytree(ws, moved)
    with FakeServer(["Compacted and moved."]) as server:
        configure(moved, server, "openai-chat")
        _ok(comal("--resume", sid, "--cwd", str(moved), "-p", "go on", cwd=moved, env_home=home))
    _ok(comal("rewind", sid, "--to", "2", "--force", cwd=moved, env_home=home))
    with ledger_at(home) as ledger:
        point = ledger.entries(sid, kinds=("message.user",))[0]
    _ok(comal("fork", sid, "--at", point.id, "--json", cwd=moved, env_home=home))
    return sid


def _pressure_session(ws: Path, home: Path) -> None:
    """Big and small outputs in a 20,000-token window: a projection, then a checkpoint."""
    task = "Inspect the numbers.\n" + "\n".join(
        f"- range {i}: check that every number from {i * 100_000} on is printed once."
        for i in range(1, 15)
    )
    big = [(i, f"seq {i * 100_000} {i * 100_000 + 1300}") for i in range(1, 7)]
    small = [(i, f"seq {i * 100_000} {i * 100_000 + 150}") for i in range(7, 40)]
    turns: list[Any] = [
        {"tool_calls": [_call(f"s{i}", "Bash", command=command)]} for i, command in big + small
    ]
    turns.append("All outputs inspected.")
    with FakeServer(turns, window=20_000) as server:
        configure(ws, server, "openai-chat")
        _ok(
            comal(
                "-p",
                task,
                "--context-window",
                "20000",
                "--max-output-tokens",
                "1024",
                cwd=ws,
                env_home=home,
                timeout=180,
            )
        )


def _child_session(ws: Path, home: Path) -> None:
    (ws / "hello.txt").write_text("hello from the file\n")
    task = {"description": "look [child-a]", "prompt": "[child-a] find the greeting"}
    parent: list[Any] = [{"tool_calls": [_call("t1", "Task", **task)]}, "The child found it."]
    agents: dict[str, list[Any]] = {
        "[child-a]": [{"tool_calls": [_call("a1", "Read", path="hello.txt")]}, "hello."]
    }
    with FakeServer(parent, agents=agents) as server:
        configure(ws, server, "anthropic-messages")
        _ok(comal("-p", "find the greeting", cwd=ws, env_home=home))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        for name, make in (
            ("tools", _tools_session),
            ("pressure", _pressure_session),
            ("child", _child_session),
        ):
            ws = Path(tmp) / name
            ws.mkdir()
            make(ws, home)
        _ok(comal("import", str(CODEX), cwd=Path(tmp), env_home=home))
        with ledger_at(home) as ledger:
            kinds = sorted(
                {e.kind for s in ledger.sessions() for e in ledger.entries(s.id, rewound=True)}
            )
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.unlink(missing_ok=True)
        conn = sqlite3.connect(home / "ledger.db")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute(f"VACUUM INTO '{OUT}'")
        conn.close()
    print(json.dumps(kinds))


if __name__ == "__main__":
    main()
