"""Claude Code 2.x (snapshots first, sub-agent files), OpenHands, Aider, re-imports."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from comal.importers import detect_format, import_files, parse_sessions
from comal.importers.plan import (
    IMPORTED_MODE,
    INTERRUPTED_TEXT,
    SessionPlan,
    is_text_action,
)
from comal.ledger import Entry, Ledger
from comal.messages import Message, ToolCallPart, message_from_json
from comal.replay.transcript import transcripts_from
from comal.usage import Usage
from tests.unit.importers.conftest import assert_paired, trajectory

SPOTTER = "claude-code-2_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
OPENHANDS = "openhands_multi-swe-bench/output.jsonl"
AIDER = "aider_monochromatic/Aquaticat__Monochromatic.aider.chat.history.md"


def _assistants(entries: list[Entry]) -> list[Message]:
    return [
        message_from_json(e.payload["message"])  # type: ignore[arg-type]
        for e in entries
        if e.kind == "message.assistant"
    ]


def _text(entry: Entry) -> str:
    return message_from_json(entry.payload["message"]).text  # type: ignore[arg-type]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_claude_code_2_file_whose_first_line_is_a_snapshot_is_detected(
    ledger: Ledger,
) -> None:
    path = trajectory(SPOTTER)
    records = _lines(path)
    assert records[0]["type"] == "file-history-snapshot"
    responses = {
        r["message"]["id"]  # type: ignore[index]
        for r in records
        if r["type"] == "assistant" and not r.get("isSidechain")
    }

    assert detect_format(path) == "claude-code"
    parent, *_ = import_files(ledger, [path])

    entries = ledger.entries(parent.session_id)
    assert_paired(entries)
    # One message per API response, although 2.x records a response's later blocks after the
    # results of its earlier calls.
    assert len(_assistants(entries)) == len(responses) == 139


def test_sub_agent_files_are_children_linked_to_the_parents_task_call(
    ledger: Ledger, tmp_path: Path
) -> None:
    source = trajectory(SPOTTER)
    shutil.copy(source, tmp_path / source.name)
    shutil.copytree(source.parent / source.stem, tmp_path / source.stem)
    path = tmp_path / source.name
    agent = tmp_path / source.stem / "subagents" / "agent-a2898e3.jsonl"
    agent_calls = {r["message"]["id"] for r in _lines(agent) if r["type"] == "assistant"}  # type: ignore[index]

    # The sub-agent file listed beside its parent is read once, as the parent's child.
    parent, *children = import_files(ledger, [path, agent])

    assert all(c.parent_id == parent.session_id for c in children)
    assert {c.label for c in children} == {
        f"{source.stem}#agent-a2898e3",
        f"{source.stem}#agent-acompact-e1f845",
    }
    child = next(c for c in children if c.label.endswith("a2898e3"))
    started = ledger.entries(child.session_id)[0].payload
    call = started["origin"]["parent_call"]  # type: ignore[index, call-overload]
    parent_entries = ledger.entries(parent.session_id)
    task = next(c for m in _assistants(parent_entries) for c in m.tool_calls if c.call_id == call)
    assert task.name == "Task"
    result = next(
        e for e in parent_entries if e.kind == "tool.result" and e.payload["call_id"] == call
    )
    assert "agentId: a2898e3" in (ledger.body(result) or b"").decode()
    child_entries = ledger.entries(child.session_id)
    assert_paired(child_entries)
    assert len(_assistants(child_entries)) == len(agent_calls) == 12
    # The replay runs each chain in its own window, and not Claude Code's compaction call.
    (parsed,) = parse_sessions(path)
    labels = [t.label for t in transcripts_from(parsed)]
    assert labels == [source.stem, f"{source.stem}#agent-a2898e3"]


def test_an_openhands_evaluation_file_imports_one_session_per_instance(ledger: Ledger) -> None:
    path = trajectory(OPENHANDS)
    records = _lines(path)

    assert detect_format(path) == "openhands"
    written = import_files(ledger, [path])

    assert [s.label for s in written] == [str(r["instance_id"]) for r in records]
    for session, record in zip(written, records, strict=True):
        history = record["history"]
        assert isinstance(history, list)
        entries = ledger.entries(session.session_id)
        assert_paired(entries)
        assert entries[0].payload["system"] == history[0]["args"]["content"]
        prompt = next(e for e in entries if e.kind == "message.user")
        assert _text(prompt) == history[1]["args"]["content"]
        responses = {
            e["tool_call_metadata"]["model_response"]["id"]
            for e in history
            if "action" in e and e.get("tool_call_metadata")
        }
        assistants = _assistants(entries)
        assert len(assistants) == len(responses)
        observed = next(
            e for e in history if e.get("observation") == "run" and e.get("tool_call_metadata")
        )
        result = next(
            r
            for r in entries
            if r.kind == "tool.result"
            and r.payload["call_id"].split("#")[0]  # type: ignore[union-attr]
            == observed["tool_call_metadata"]["tool_call_id"]
        )
        assert ledger.body(result) == observed["content"].encode()
        assert result.payload["exit_code"] == observed["extras"]["metadata"]["exit_code"]
        # From the event's metadata, not its text: the view's trailer states it.
        assert "exit_code_in_output" not in result.payload
        usage = next(e for e in entries if e.kind == "message.assistant").payload["usage"]
        assert usage["new_input"] > 0  # type: ignore[index, call-overload, operator]


def test_an_aider_history_imports_its_chats_with_prompts_and_edit_pairs(ledger: Ledger) -> None:
    path = trajectory(AIDER)
    text = path.read_text()
    prompts = [
        line[5:].removesuffix("  ")
        for line in text.splitlines()
        if line.startswith("#### ")
        and not re.search(r"\(Y\)es/\(N\)o.*\]: ?\S*$", line.rstrip())
        and not line[5:].startswith("/")
    ]

    assert detect_format(path) == "aider"
    written = import_files(ledger, [path])

    assert all(s.source == "import:aider" for s in written)
    users: list[str] = []
    edits = 0
    for session in written:
        entries = ledger.entries(session.session_id)
        assert_paired(entries)
        for entry in entries:
            if entry.kind == "message.user":
                users.append(_text(entry))
        for message in _assistants(entries):
            for call in message.tool_calls:
                assert is_text_action(call.call_id)
                if call.name == "edit":
                    edits += 1
                    first = call.arguments["edits"][0]  # type: ignore[index]
                    assert first["path"] in message.text  # type: ignore[index, call-overload, operator]
    # Consecutive `####` lines are one prompt.
    assert "\n".join(users).split("\n") == prompts
    assert edits >= 10
    results = [
        ledger.body(e) or b""
        for s in written
        for e in ledger.entries(s.session_id)
        if e.kind == "tool.result"
    ]
    assert any(b"Applied edit to" in body for body in results)


def test_importing_the_same_file_again_returns_the_session_already_imported(
    ledger: Ledger,
) -> None:
    path = trajectory(OPENHANDS)

    first = import_files(ledger, [path])
    again = import_files(ledger, [path])
    fresh = import_files(ledger, [path], new=True)

    assert [s.session_id for s in again] == [s.session_id for s in first]
    assert all(s.existing for s in again)
    assert [s.label for s in again] == [s.label for s in first]
    assert not set(s.session_id for s in fresh) & set(s.session_id for s in first)
    assert len(ledger.sessions()) == 2 * len(first)


@pytest.mark.parametrize("name", [SPOTTER, OPENHANDS, AIDER])
def test_a_forced_format_that_does_not_fit_is_a_clear_error(name: str) -> None:
    from comal.errors import ImportFormatError

    path = trajectory(name)
    other = "swe-agent" if not name.endswith(".md") else "openhands"
    with pytest.raises(ImportFormatError, match=re.escape(str(path))):
        parse_sessions(path, other)


def test_an_openhands_event_list_is_one_session(ledger: Ledger, tmp_path: Path) -> None:
    record = _lines(trajectory(OPENHANDS))[0]
    events = tmp_path / "events.json"
    events.write_text(json.dumps(record["history"], indent=1))

    assert detect_format(events) == "openhands"
    (session,) = import_files(ledger, [events])

    from_line = import_files(ledger, [trajectory(OPENHANDS)])[0]
    mine, theirs = (
        [(e.kind, e.payload.get("call_id")) for e in ledger.entries(s.session_id)[1:]]
        for s in (session, from_line)
    )
    assert mine == theirs
    assert session.label == "events"


def _stopped_mid_task(tmp_path: Path, *, with_agent: bool) -> tuple[Path, str]:
    """The spotter recording cut where Claude Code stopped while its sub-agent ran (before the
    Task result), in `tmp_path`: (parent file, the Task call id)."""
    source = trajectory(SPOTTER)
    lines = source.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    index, call = next(
        (i, str(b["tool_use_id"]))
        for i, r in enumerate(records)
        if r["type"] == "user" and isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_result" and "agentId: a2898e3" in json.dumps(b.get("content"))
    )
    path = tmp_path / source.name
    path.write_text("\n".join(lines[:index]) + "\n")
    if with_agent:
        folder = tmp_path / source.stem / "subagents"
        folder.mkdir(parents=True)
        agent = source.parent / source.stem / "subagents" / "agent-a2898e3.jsonl"
        shutil.copy(agent, folder / agent.name)
    return path, call


def test_a_task_whose_sub_agent_ran_past_the_end_of_the_file_stays_open(
    tmp_path: Path,
) -> None:
    path, call = _stopped_mid_task(tmp_path, with_agent=True)

    (parsed,) = parse_sessions(path)

    # Linked by the `agent_progress` records: the result that names the agent is not there.
    (child,) = parsed.children
    assert child.parent_call_id == call
    started = parsed.entries[-1]
    assert started.kind == "tool.started"
    assert started.payload["call_id"] == call
    assert started.payload["name"] == "Task"
    permission = started.payload["permission"]
    assert isinstance(permission, dict)
    assert (permission["decision"], permission["mode"]) == ("allow", IMPORTED_MODE)
    assert "agent-a2898e3.jsonl" in str(permission["reason"])
    assert not [
        e for e in parsed.entries if e.kind == "tool.result" and e.payload["call_id"] == call
    ]


def test_a_task_without_its_sub_agent_file_is_closed_as_uncertain(tmp_path: Path) -> None:
    path, call = _stopped_mid_task(tmp_path, with_agent=False)

    (parsed,) = parse_sessions(path)

    assert parsed.children == ()
    assert not [e for e in parsed.entries if e.kind == "tool.started"]
    last = parsed.entries[-1]
    assert (last.kind, last.payload["call_id"], last.payload["status"]) == (
        "tool.result",
        call,
        "uncertain",
    )
    assert last.body == INTERRUPTED_TEXT.encode()


def test_only_the_named_running_calls_of_the_last_turn_stay_open() -> None:
    plan = SessionPlan(Path("x.jsonl"), "anthropic-messages")
    plan.user_text("go")
    calls = (ToolCallPart("t1", "Task", {"prompt": "a"}), ToolCallPart("r1", "Read", {}))
    plan.assistant(calls, model="m", finish="tool_calls", usage=Usage(), usage_raw=None)

    entries = plan.done({"t1": "agent-x.jsonl", "gone": "agent-y.jsonl"})

    kinds = [(e.kind, e.payload.get("call_id"), e.payload.get("status")) for e in entries[2:]]
    assert kinds == [("tool.started", "t1", None), ("tool.result", "r1", "uncertain")]
    assert entries[2].payload["arguments"] == {"prompt": "a"}
