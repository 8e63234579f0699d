"""mini-swe-agent (v1 text actions, v2 tool calling) and SWE-agent `.traj` imports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from comal.errors import ImportFormatError
from comal.importers import detect_format, import_files
from comal.importers.plan import is_text_action
from comal.ledger import Ledger
from comal.messages import message_from_json
from tests.unit.importers.conftest import assert_paired, trajectory

MINI_V1 = "mini-swe-agent_gemini-3-pro/django__django-11138.traj.json"
MINI_V2 = "mini-swe-agent-v2_gpt-5-mini/django__django-11163.traj.json"
SWE_TEXT = "swe-agent_demos/pydicom__pydicom-1458.traj"
SWE_FUNCTIONS = "swe-agent_demos/marshmallow-1867__function_calling_replace.traj"


def _assistants(ledger: Ledger, session_id: str) -> list[object]:
    return [
        message_from_json(e.payload["message"])  # type: ignore[arg-type]
        for e in ledger.entries(session_id)
        if e.kind == "message.assistant"
    ]


def test_mini_v1_text_actions_become_bash_calls_with_observations_as_results(
    ledger: Ledger,
) -> None:
    path = trajectory(MINI_V1)
    messages = json.loads(path.read_text())["messages"]
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    one_block = [r for r in replies if r.count("```bash") == 1]

    (session,) = import_files(ledger, [path])

    assert detect_format(path) == "mini-swe-agent"
    entries = ledger.entries(session.session_id)
    assert_paired(entries)
    assistants = _assistants(ledger, session.session_id)
    assert len(assistants) == len(replies)
    calls = [c for m in assistants for c in m.tool_calls]  # type: ignore[attr-defined]
    assert len(calls) == len(one_block)
    assert all(c.name == "bash" and is_text_action(c.call_id) for c in calls)
    assert [m.text for m in assistants] == replies  # type: ignore[attr-defined]
    first_call_index = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
    observation = messages[first_call_index + 1]["content"]
    result = next(e for e in entries if e.kind == "tool.result")
    assert ledger.body(result) == observation.encode()
    assert result.payload["exit_code"] == 0
    assert result.payload["exit_code_in_output"] is True  # the observation's <returncode>
    assert entries[0].payload["system"] == messages[0]["content"]


def test_mini_v2_native_tool_calls_keep_their_ids(ledger: Ledger) -> None:
    path = trajectory(MINI_V2)
    messages = json.loads(path.read_text())["messages"]
    ids = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}

    (session,) = import_files(ledger, [path])

    entries = ledger.entries(session.session_id)
    assert_paired(entries)
    results = [e for e in entries if e.kind == "tool.result"]
    assert [r.payload["call_id"] for r in results] == ids
    for result in results:
        expected = "ok" if result.payload["call_id"] in answered else "uncertain"
        assert result.payload["status"] == expected
    assert entries[-1].kind == "session.finished"


@pytest.mark.parametrize("name", [SWE_TEXT, SWE_FUNCTIONS])
def test_swe_agent_variants(ledger: Ledger, name: str) -> None:
    path = trajectory(name)
    history = json.loads(path.read_text())["history"]
    replies = [m for m in history if m["role"] == "assistant"]

    (session,) = import_files(ledger, [path])

    assert detect_format(path) == "swe-agent"
    entries = ledger.entries(session.session_id)
    assert_paired(entries)
    assistants = _assistants(ledger, session.session_id)
    assert len(assistants) == len(replies)
    ids = [c.call_id for m in assistants for c in m.tool_calls]  # type: ignore[attr-defined]
    assert len(ids) == len(set(ids)), "call ids must be unique within a session"
    for reply, message in zip(replies, assistants, strict=True):
        calls = message.tool_calls  # type: ignore[attr-defined]
        if reply.get("tool_calls"):
            # A recorded id used again (replayed demos reuse them) becomes `<id>#<n>`.
            recorded = [c.call_id.split("#")[0] for c in calls]
            assert recorded == [c["id"] for c in reply["tool_calls"]]
        else:
            assert [c.arguments["command"] for c in calls] == [reply["action"].strip()]


def test_a_malformed_json_document_names_the_line(ledger: Ledger, tmp_path: Path) -> None:
    bad = tmp_path / "broken.traj.json"
    bad.write_text('{\n  "messages": [\n    {"role": "user", "content": "x"},,\n  ]\n}\n')

    with pytest.raises(ImportFormatError, match=r"broken\.traj\.json:3: not JSON"):
        import_files(ledger, [bad], "mini-swe-agent")
    assert ledger.sessions() == []
