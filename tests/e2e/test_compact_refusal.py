"""`comal compact` that would not make the view smaller: refused (COMPACT_NOT_SMALLER, exit 5)
with its figures, recorded, nothing lost, and the session continues; once the history is long
enough the same command derives. Each step is a real `python -m comal` subprocess."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal_here as comal
from tests.e2e.headless_support import configure, ledger_at

pytestmark = pytest.mark.e2e

FIGURES = re.compile(r"~([\d,]+) → ~([\d,]+) tokens")


def figures(text: str) -> tuple[int, int]:
    found = FIGURES.search(text)
    assert found is not None, text
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def test_compact_refused_then_resumed_then_compacted(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    for i in range(6):
        body = "".join(f"def handler_{i}_{k}(x):\n    return x * {k}\n" for k in range(60))
        (workspace / f"part{i}.py").write_text(body)
    reads = [
        {"tool_calls": [{"id": f"r{i}", "name": "Read", "arguments": {"path": f"part{i}.py"}}]}
        for i in range(6)
    ]
    with FakeServer(["Seven, noted.", *reads, "All read."]) as server:
        configure(workspace, server, "openai-chat")
        first = comal("-p", "remember the number 7", cwd=workspace, env_home=home)
        assert first.code == 0, first.stderr
        with ledger_at(home) as ledger:
            sid = ledger.sessions()[0].id
            recorded = [(e.id, e.kind, e.payload) for e in ledger.entries(sid)]

        refused = comal("compact", sid, cwd=workspace, env_home=home)
        as_json = comal("compact", sid, "--json", cwd=workspace, env_home=home)
        show = comal("show", sid, cwd=workspace, env_home=home)
        verify = comal("verify", sid, cwd=workspace, env_home=home)
        # The session goes on: the lock was released and the history is as it was.
        more = comal("--resume", sid, "-p", "read the parts", cwd=workspace, env_home=home)
        compacted = comal("compact", sid, "--json", cwd=workspace, env_home=home)

    assert refused.code == 5
    assert refused.stdout == ""
    assert "Traceback" not in refused.stderr
    assert refused.stderr.startswith("comal: COMPACT_NOT_SMALLER: compaction refused")
    assert len(refused.stderr.strip().splitlines()) == 1
    before, after = figures(refused.stderr)
    assert after >= before

    assert as_json.code == 5
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == "COMPACT_NOT_SMALLER"
    assert figures(error["message"]) == (before, after)

    assert "compaction refused: it would not make the view smaller" in show.stdout
    assert verify.code == 0, verify.stdout + verify.stderr
    assert more.code == 0, more.stderr
    assert compacted.code == 0, compacted.stderr
    checkpoint = json.loads(compacted.stdout)["checkpoint"]
    assert checkpoint["number"] == 1
    assert checkpoint["after_tokens"] < checkpoint["before_tokens"]

    with ledger_at(home) as ledger:
        entries = ledger.entries(sid)
        cancelled = ledger.entries(sid, kinds=("compact.cancelled",))
        checkpoints = ledger.entries(sid, kinds=("checkpoint",))
    assert [(e.id, e.kind, e.payload) for e in entries[: len(recorded)]] == recorded
    # Each refusal is one entry with its figures; the later compaction is the only checkpoint.
    assert [(c.payload["reason"], c.payload["before_tokens"]) for c in cancelled] == [
        ("not_smaller", before),
        ("not_smaller", before),
    ]
    assert len(checkpoints) == 1
    assert "remember the number 7" in str(checkpoints[0].payload["text"])
