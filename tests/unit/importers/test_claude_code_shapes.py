"""Two shapes of real Claude Code 2.x files: two records on one line, and a message typed while
a response's parallel calls run (fixtures cut from the shared set's `claude-code-2_entire-edge`
files, long strings shortened)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from comal.errors import ImportFormatError
from comal.importers import import_files, parse_sessions
from comal.ledger import Ledger
from comal.messages import TextPart, message_from_json
from tests.unit.importers.conftest import FIXTURES, assert_paired

TWO_ON_A_LINE = FIXTURES / "claude_code" / "two-records-on-a-line.jsonl"
TYPED = FIXTURES / "claude_code" / "typed-during-parallel-calls.jsonl"


def _values(path: Path) -> list[dict[str, object]]:
    """Every record of the file, a doubled line split with the standard decoder."""
    decoder = json.JSONDecoder()
    out: list[dict[str, object]] = []
    for line in path.read_text().splitlines():
        at = 0
        while at < len(line):
            value, at = decoder.raw_decode(line, at)
            out.append(value)
    return out


def test_a_line_holding_two_records_reads_both(ledger: Ledger) -> None:
    records = _values(TWO_ON_A_LINE)
    doubled = next(line for line in TWO_ON_A_LINE.read_text().splitlines() if "}{" in line)
    with pytest.raises(json.JSONDecodeError):
        json.loads(doubled)
    titles = [str(r["summary"]) for r in records if r["type"] == "summary"]

    (written,) = import_files(ledger, [TWO_ON_A_LINE])

    entries = ledger.entries(written.session_id)
    summaries = [e.payload["text"] for e in entries if e.kind == "message.summary"]
    assert summaries == titles
    assert len(titles) == 2
    (reply,) = [e for e in entries if e.kind == "message.assistant"]
    parts = message_from_json(reply.payload["message"]).parts  # type: ignore[arg-type]
    text = "".join(p.text for p in parts if isinstance(p, TextPart))
    assert "TestLogging_IncludesContextValues" in text


def test_a_line_with_garbage_after_its_record_is_still_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = TWO_ON_A_LINE.read_text().splitlines()
    lines[1] = lines[1] + "{oops"
    bad.write_text("\n".join(lines) + "\n")

    with pytest.raises(ImportFormatError, match=rf"{bad.name}:2: not JSON"):
        parse_sessions(bad)


def test_text_typed_while_parallel_calls_run_follows_all_their_results(ledger: Ledger) -> None:
    records = _values(TYPED)
    calls = [
        str(b["id"])
        for r in records
        if r["type"] == "assistant"
        for b in r["message"]["content"]  # type: ignore[index]
        if b["type"] == "tool_use"
    ]
    (mixed,) = [
        r
        for r in records
        if r["type"] == "user"
        and isinstance(r["message"]["content"], list)  # type: ignore[index]
        and len(r["message"]["content"]) == 2  # type: ignore[index]
    ]
    typed = mixed["message"]["content"][1]["text"]  # type: ignore[index]
    assert len(calls) == 3

    (written,) = import_files(ledger, [TYPED])

    entries = ledger.entries(written.session_id)
    assert_paired(entries)
    kinds = [
        (e.kind, e.payload.get("call_id"))
        for e in entries
        if e.kind in ("message.user", "message.assistant", "tool.result")
    ]
    assert kinds == [
        ("message.user", None),
        ("message.assistant", None),
        *[("tool.result", call) for call in calls],
        ("message.user", None),
        ("message.assistant", None),
    ]
    users = [e for e in entries if e.kind == "message.user"]
    last = message_from_json(users[-1].payload["message"])  # type: ignore[arg-type]
    assert last.parts == (TextPart(typed),)
    results = [e for e in entries if e.kind == "tool.result"]
    assert all(r.payload["status"] == "ok" for r in results)


CONTINUED = (
    Path(__file__).parents[3]
    / "../shared/trajectories/claude-code-2_entire-edge/0a93878f-dc30-4a5d-882f-3cd81cd3d499.jsonl"
).resolve()


def test_a_file_that_opens_with_an_earlier_sessions_result_keeps_it_as_text(
    ledger: Ledger,
) -> None:
    # A real Claude Code 2.x file that continues an earlier session: its first record is the
    # result of a call the earlier session made (a rejected tool use). The call is not in the
    # file, so the result is what the person's turn said.
    if not CONTINUED.is_file():
        pytest.skip(f"shared trajectory not present at {CONTINUED}")
    first = json.loads(CONTINUED.read_text().splitlines()[0])
    call_id = first["message"]["content"][0]["tool_use_id"]

    (written,) = import_files(ledger, [CONTINUED])

    entries = ledger.entries(written.session_id)
    opening = next(e for e in entries if e.kind == "message.user")
    text = "".join(
        p.text
        for p in message_from_json(opening.payload["message"]).parts  # type: ignore[arg-type]
        if isinstance(p, TextPart)
    )
    assert text.startswith(f"[result of {call_id}, a call made before this file]\n")
    assert "The user doesn't want to proceed with this tool use." in text
    assert_paired(entries)


def test_a_result_for_no_call_after_a_response_is_still_an_error(tmp_path: Path) -> None:
    def record(kind: str, content: object, uuid: str) -> str:
        message = {"role": kind, "content": content}
        if kind == "assistant":
            message |= {"id": "msg_1", "model": "claude-x", "stop_reason": "end_turn"}
        return json.dumps({"type": kind, "uuid": uuid, "sessionId": "s", "message": message})

    orphan = {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "x"}
    path = tmp_path / "orphan.jsonl"
    path.write_text(
        "\n".join(
            [
                record("user", "hello", "u1"),
                record("assistant", [{"type": "text", "text": "hi"}], "a1"),
                record("user", [orphan], "u2"),
            ]
        )
        + "\n"
    )
    with pytest.raises(ImportFormatError, match="tool result for unknown call 'toolu_gone'"):
        parse_sessions(path)
