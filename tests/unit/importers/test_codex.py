"""Codex CLI rollouts: response grouping, token_count usage, compaction, interrupted calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.errors import ImportFormatError
from comal.importers import detect_format, import_files
from comal.ledger import Ledger
from comal.messages import ReasoningPart, message_from_json
from comal.usage import Usage
from tests.unit.importers.conftest import FIXTURES, assert_paired

ROLLOUT = next((FIXTURES / "codex").glob("rollout-*.jsonl"))


def test_a_rollout_becomes_a_comal_session(ledger: Ledger) -> None:
    assert detect_format(ROLLOUT) == "codex"

    (session,) = import_files(ledger, [ROLLOUT])

    entries = ledger.entries(session.session_id)
    assert_paired(entries)
    kinds = [e.kind for e in entries]
    assert kinds == [
        "session.started",
        "message.user",
        "message.user",
        "message.assistant",
        "tool.result",
        "message.assistant",
        "tool.result",
        "message.summary",
        "message.assistant",
        "tool.result",
        "message.assistant",
        "tool.result",
    ]
    assert ledger.session(session.session_id).title.startswith("The test tests/test_frob")
    started = entries[0].payload
    assert started["system"] == "You are Codex, a coding agent. Keep answers short."
    assert started["cwd"] == "/home/dev/widgets"
    first = message_from_json(entries[3].payload["message"])  # type: ignore[arg-type]
    assert isinstance(first.parts[0], ReasoningPart)
    assert first.parts[0].encrypted_content == "gAAAAABow_ENCRYPTED_1"
    assert [c.name for c in first.tool_calls] == ["shell"]
    assert first.tool_calls[0].arguments["workdir"] == "/home/dev/widgets"
    second = Usage.from_json(entries[5].payload["usage"])  # type: ignore[arg-type]
    assert (second.new_input, second.cache_read, second.output) == (5060 - 4736, 4736, 55)
    assert entries[4].payload["exit_code"] == 1
    # Read from the output's own metadata: the view repeats it in no trailer.
    assert entries[4].payload["exit_code_in_output"] is True
    assert entries[7].payload["origin"] == "codex:compacted"
    patch = message_from_json(entries[8].payload["message"])  # type: ignore[arg-type]
    assert patch.tool_calls[0].name == "apply_patch"
    assert ledger.body(entries[9]) == b"Success. Updated the following files:\nM widgets/core.py\n"
    assert entries[11].payload["status"] == "uncertain"


def test_a_record_without_payload_is_a_format_error(ledger: Ledger, tmp_path: Path) -> None:
    bad = tmp_path / "rollout-bad.jsonl"
    lines = ROLLOUT.read_text().splitlines()
    lines[2] = '{"timestamp":"2025-09-12T10:15:02.121Z","type":"turn_context"}'
    bad.write_text("\n".join(lines) + "\n")

    with pytest.raises(ImportFormatError, match=r"rollout-bad\.jsonl:3:"):
        import_files(ledger, [ROLLOUT, bad])
    assert ledger.sessions() == []
