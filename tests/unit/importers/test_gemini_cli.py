"""Gemini CLI chat recordings: calls answered inside their response, token usage, notices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from comal.errors import ImportFormatError
from comal.importers import detect_format, import_files, parse_file
from comal.importers.plan import recorded_ms
from comal.ledger import Ledger
from comal.messages import message_from_json
from comal.replay.replayer import POLICIES, replay_file
from comal.usage import Usage
from tests.unit.importers.conftest import FIXTURES, assert_paired

RECORDING = next((FIXTURES / "gemini_cli").glob("session-*.json"))


def test_a_recording_becomes_a_comal_session(ledger: Ledger) -> None:
    assert detect_format(RECORDING) == "gemini-cli"

    (session,) = import_files(ledger, [RECORDING])

    entries = ledger.entries(session.session_id)
    assert_paired(entries)
    assert [e.kind for e in entries] == [
        "session.started",
        "message.user",
        "message.assistant",
        "tool.result",
        "tool.result",
        "message.assistant",  # the `info` notice in between was never sent to the model
        "tool.result",
        "message.assistant",
        "tool.result",
        "message.user",
        "message.assistant",
        "tool.result",
    ]
    assert ledger.session(session.session_id).title == "Fix the failing test in tests/test_parse.py"
    first = message_from_json(entries[2].payload["message"])  # type: ignore[arg-type]
    assert [c.name for c in first.tool_calls] == ["read_file", "run_shell_command"]
    assert first.tool_calls[1].arguments["command"] == "python -m pytest -q tests/test_parse.py"
    assert (ledger.body(entries[3]) or b"").startswith(b"def parse_header(raw):\n")
    shell = (ledger.body(entries[4]) or b"").decode()
    assert "FAILED tests/test_parse.py::test_last_field" in shell
    assert entries[4].payload["exit_code"] == 1
    assert entries[4].payload["exit_code_in_output"] is True  # its own `Exit Code:` line
    usage = Usage.from_json(entries[5].payload["usage"])  # type: ignore[arg-type]
    assert (usage.new_input, usage.cache_read, usage.output, usage.reasoning) == (
        9_750 - 8_011,
        8_011,
        180 + 90,
        90,
    )
    second = message_from_json(entries[5].payload["message"])  # type: ignore[arg-type]
    assert second.text == "The parser drops the last field: the slice `[:-1]` is wrong."
    assert entries[5].payload["model"] == "gemini-2.5-flash"
    cancelled = entries[8]
    assert cancelled.payload["status"] == "error"
    assert ledger.body(cancelled) == b"[Operation Cancelled] Reason: User cancelled the operation."
    assert entries[-1].payload["status"] == "uncertain"  # still executing when the file ends


def test_entries_keep_the_recorded_times() -> None:
    parsed = parse_file(RECORDING)
    times = [e.at_ms for e in parsed.entries]
    assert times[0] == recorded_ms("2025-11-20T09:14:02.118Z")
    assert times[3] == recorded_ms("2025-11-20T09:14:12.307Z")  # the shell result's own time
    assert all(t is not None for t in times)
    assert times == sorted(times)  # type: ignore[type-var]


def test_the_replay_reads_a_recording() -> None:
    """Every policy replays it; the 17-minute pause before the last request is a cold call."""
    rows = replay_file(str(RECORDING), [32_000], POLICIES)
    comal = next(r for r in rows if r["policy"] == "comal")
    assert comal["calls"] == 4
    assert comal["overflows"] == 0
    assert comal["cold_calls"] == 1


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda doc: doc["messages"].append({"type": "note"}), r"messages\[7\]: unknown type"),
        (lambda doc: doc["messages"][1]["toolCalls"][0].pop("id"), r"a tool call without an id"),
        (lambda doc: doc["messages"].insert(0, "hi"), r"messages\[0\] is not a message"),
    ],
)
def test_a_malformed_recording_is_a_format_error_and_imports_nothing(
    ledger: Ledger, tmp_path: Path, edit: object, reason: str
) -> None:
    doc = json.loads(RECORDING.read_text())
    edit(doc)  # type: ignore[operator]
    bad = tmp_path / "session-bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ImportFormatError, match=reason):
        import_files(ledger, [RECORDING, bad])
    assert ledger.sessions() == []


def test_a_cut_recording_names_the_file(tmp_path: Path) -> None:
    cut = tmp_path / "session-cut.json"
    cut.write_bytes(RECORDING.read_bytes()[:900])
    with pytest.raises(ImportFormatError, match=r"session-cut\.json"):
        parse_file(cut, "gemini-cli")
