"""A local model that writes its tool call as fenced JSON text, end to end: `comal -p` against
the loopback fake server takes the text as the call, runs the tool, sends its result back and
records where the call came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.ledger.records import AssistantMessage
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal, configure, ledger_at

pytestmark = pytest.mark.e2e

FENCED_CALL = '```json\n{"name": "Bash", "arguments": {"command": "cat notes.txt"}}\n```'


def test_a_fenced_json_call_in_the_text_runs_the_tool(workspace: Path, home: Path) -> None:
    (workspace / "notes.txt").write_text("the launch code is 4417\n")
    with FakeServer([FENCED_CALL, "The launch code is 4417."]) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "what is the launch code?", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        stats = server.stats()
        assert (stats.requests, stats.orphan_violations) == (2, 0)
        second = str(server.received[1].body)
    assert "The launch code is 4417." in run.stdout
    assert "TOOL_CALL_FROM_TEXT: took the model's text (fenced JSON) as a call to Bash" in (
        run.stderr
    )
    assert "the launch code is 4417" in second  # the tool's output went back to the model
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        entries = list(ledger.entries(info.id))
        assert ledger.verify(info.id).ok
    assert [e.kind for e in entries if e.kind.startswith("tool.")] == [
        "tool.started",
        "tool.result",
    ]
    replies = [AssistantMessage.from_entry(e) for e in entries if e.kind == "message.assistant"]
    assert [r.recovered for r in replies] == [
        {"from": "text", "form": "fenced", "text": FENCED_CALL},
        None,
    ]


def test_a_text_call_to_a_tool_not_offered_is_answered_with_a_notice(
    workspace: Path, home: Path
) -> None:
    text = '{"name": "run_shell", "arguments": {"cmd": "ls"}}'
    with FakeServer([text]) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "list the files", cwd=workspace, env_home=home)
        assert server.stats().requests == 1
    assert run.code == 0, run.stderr
    assert (
        "TOOL_CALL_AS_TEXT: the model wrote a tool call as text (bare JSON) that was not run:"
        " 'run_shell' is not an offered tool"
    ) in run.stderr
