"""Claude Code transcripts: grouping by message.id, sidechains, summaries, media, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from comal.errors import ImportFormatError
from comal.importers import import_files, parse_sessions
from comal.ledger import Ledger
from comal.messages import message_from_json
from comal.usage import Usage
from tests.unit.importers.conftest import assert_paired, trajectory

SIDECHAINS = "claude-code_vsla/0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl"
WITH_IMAGE = "claude-code_vsla/6dc88126-2048-43a9-b5c2-b9747d5a0301.jsonl"
TWO_TASKS = "claude-code_vsla/9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl"


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_responses_are_grouped_by_message_id_and_sidechains_become_children(
    ledger: Ledger,
) -> None:
    path = trajectory(SIDECHAINS)
    records = _records(path)
    main_ids = {
        r["message"]["id"]  # type: ignore[index]
        for r in records
        if r["type"] == "assistant" and not r.get("isSidechain")
    }
    side_ids = {
        r["message"]["id"]  # type: ignore[index]
        for r in records
        if r["type"] == "assistant" and r.get("isSidechain")
    }

    written = import_files(ledger, [path])

    parent, *children = written
    assert parent.parent_id is None
    assert children
    assert all(c.parent_id == parent.session_id for c in children)
    main = ledger.entries(parent.session_id)
    assistants = [e for e in main if e.kind == "message.assistant"]
    assert len(assistants) == len(main_ids)
    child_calls = sum(
        1 for c in children for e in ledger.entries(c.session_id) if e.kind == "message.assistant"
    )
    assert child_calls == len(side_ids)
    assert main[0].kind == "session.started"
    assert main[0].payload["source"] == "import:claude-code"
    assert_paired(main)
    for child in children:
        assert_paired(ledger.entries(child.session_id))


def test_compaction_summary_is_kept_as_a_marked_entry(ledger: Ledger) -> None:
    path = trajectory(SIDECHAINS)
    compact = next(r for r in _records(path) if r.get("isCompactSummary"))

    (parent, *_) = import_files(ledger, [path])

    summaries = [e for e in ledger.entries(parent.session_id) if e.kind == "message.summary"]
    assert [s.payload["origin"] for s in summaries] == ["claude-code:compact"]
    assert summaries[0].payload["text"] == compact["message"]["content"]  # type: ignore[index]


def test_tool_results_keep_exact_bytes_and_usage_is_normalized(ledger: Ledger) -> None:
    path = trajectory(WITH_IMAGE)
    records = _records(path)
    first_result = next(
        block
        for r in records
        if r["type"] == "user" and isinstance(r["message"]["content"], list)  # type: ignore[index]
        for block in r["message"]["content"]  # type: ignore[index]
        if block.get("type") == "tool_result"
    )
    first_usage = next(r for r in records if r["type"] == "assistant")["message"]["usage"]  # type: ignore[index]

    (session,) = import_files(ledger, [path])

    entries = ledger.entries(session.session_id)
    result = next(e for e in entries if e.kind == "tool.result")
    assert result.payload["call_id"] == first_result["tool_use_id"]
    expected = first_result["content"]
    if isinstance(expected, list):
        expected = "\n".join(b.get("text", "") for b in expected)
    assert ledger.body(result) == expected.encode()
    assistant = next(e for e in entries if e.kind == "message.assistant")
    usage = Usage.from_json(assistant.payload["usage"])  # type: ignore[arg-type]
    assert usage.new_input == first_usage["input_tokens"]
    assert usage.cache_write == first_usage["cache_creation_input_tokens"]
    assert usage.cache_read == first_usage["cache_read_input_tokens"]
    assert assistant.payload["usage_raw"] == first_usage


def test_images_become_media(ledger: Ledger) -> None:
    (session,) = import_files(ledger, [trajectory(WITH_IMAGE)])

    media = [
        part
        for e in ledger.entries(session.session_id)
        if e.kind == "message.user"
        for part in message_from_json(e.payload["message"]).parts  # type: ignore[arg-type]
        if type(part).__name__ == "MediaPart"
    ]
    assert len(media) == 1
    assert media[0].media_type.startswith("image/")  # type: ignore[union-attr]


def test_a_malformed_line_names_file_and_line_and_nothing_is_imported(
    ledger: Ledger, tmp_path: Path
) -> None:
    good = tmp_path / "good.jsonl"
    shutil.copy(trajectory(WITH_IMAGE), good)
    bad = tmp_path / "bad.jsonl"
    lines = good.read_text().splitlines()
    lines[4] = lines[4][:-7]
    bad.write_text("\n".join(lines) + "\n")

    with pytest.raises(ImportFormatError) as caught:
        import_files(ledger, [good, bad])

    assert f"{bad}:5:" in str(caught.value)
    assert ledger.sessions() == []


def test_a_result_for_an_unknown_call_is_a_format_error(ledger: Ledger, tmp_path: Path) -> None:
    # After a response of the file (before one, a result answers a call of the earlier session
    # the file continues: `test_claude_code_shapes.py`).
    path = tmp_path / "orphan.jsonl"
    reply = {
        "type": "assistant",
        "uuid": "a1",
        "sessionId": "s",
        "message": {
            "id": "msg_1",
            "role": "assistant",
            "model": "claude-x",
            "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "hello"}],
        },
    }
    record = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "s",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "hi"}],
        },
    }
    path.write_text(json.dumps(reply) + "\n" + json.dumps(record) + "\n")

    with pytest.raises(ImportFormatError, match=r"orphan\.jsonl:2: tool result for unknown call"):
        import_files(ledger, [path])
    assert ledger.sessions() == []


def test_a_call_without_a_result_gets_an_uncertain_result(ledger: Ledger, tmp_path: Path) -> None:
    path = tmp_path / "interrupted.jsonl"
    records = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"content": "go"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "msg_1",
                "model": "claude-sonnet-4",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}],
                "usage": {"input_tokens": 3, "output_tokens": 2},
            },
        },
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"content": "stop"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))

    (session,) = import_files(ledger, [path])

    entries = ledger.entries(session.session_id)
    assert [e.kind for e in entries] == [
        "session.started",
        "message.user",
        "message.assistant",
        "tool.result",
        "message.user",
    ]
    assert entries[3].payload["status"] == "uncertain"
    assert entries[3].payload["call_id"] == "toolu_1"
    assert b"interrupted" in (ledger.body(entries[3]) or b"")


def test_sidechains_are_linked_to_the_task_call_whose_prompt_they_start_with() -> None:
    path = trajectory(TWO_TASKS)
    records = _records(path)
    prompts = {
        str(b["input"]["prompt"]): str(b["id"])
        for r in records
        if r.get("type") == "assistant" and not r.get("isSidechain")
        for b in r["message"]["content"]  # type: ignore[index]
        if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Task"
    }
    assert len(prompts) == 2

    (parsed,) = parse_sessions(path)

    links = {child.parent_call_id: child.title for child in parsed.children}
    assert set(links) == set(prompts.values())
    for prompt, call in prompts.items():
        assert prompt.startswith(links[call])


def test_a_file_that_ends_inside_a_sidechain_keeps_its_task_call_open(tmp_path: Path) -> None:
    source = trajectory(SIDECHAINS)
    lines = source.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    # Where Claude Code stopped while the sub-agent ran: the last sidechain record.
    last = max(i for i, r in enumerate(records) if r.get("isSidechain"))
    path = tmp_path / source.name
    path.write_text("\n".join(lines[: last + 1]) + "\n")

    (parsed,) = parse_sessions(path)

    (child,) = parsed.children
    started = parsed.entries[-1]
    assert started.kind == "tool.started"
    assert started.payload["call_id"] == child.parent_call_id
    assert started.payload["name"] == "Task"
    assert [e.kind for e in child.entries][-1] == "message.assistant"  # the child had answered
