"""`comal sessions`, `comal show` and `comal verify` on a real ledger, run in-process (what they
print and return is all that is checked; `test_cli_failures.py` runs real processes)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from comal.config import load_config
from comal.ledger import Ledger
from comal.ledger.schema import SCHEMA_VERSION
from comal.messages import Message, TextPart, ToolCallPart, message_to_json, user_text
from tests.cli_support import run_cli

SID = "0199aaaa-0000-7000-8000-00000000000a"
OTHER = "0199aaab-0000-7000-8000-00000000000b"
LONG_OUTPUT = b"".join(b"line %05d of a long listing\n" % i for i in range(400))


def comal(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


@pytest.fixture
def recorded() -> dict[str, str]:
    """A ledger at the configured path holding one session with every kind `show` marks."""
    with Ledger.open(load_config().ledger_path) as ledger:
        sid = ledger.create_session(
            cwd="/work/project", model="model-x", title="fix tests", session_id=SID
        )
        ledger.append(sid, "session.started", {"cwd": "/work/project", "model": "model-x"})
        ledger.append(sid, "message.user", {"message": message_to_json(user_text("run ls"))})
        call = ToolCallPart("call_7", "shell", {"command": "ls -la"})
        reply = Message("assistant", (TextPart("Listing the files."), call))
        ledger.append(
            sid,
            "message.assistant",
            {"message": message_to_json(reply), "model": "model-x", "finish": "tool_calls"},
        )
        ledger.append(
            sid,
            "tool.result",
            {"call_id": "call_7", "name": "shell", "status": "ok", "exit_code": 0},
            body=LONG_OUTPUT,
        )
        ledger.append(
            sid,
            "tool.result",
            {"call_id": "call_8", "name": "shell", "status": "error", "exit_code": 2},
            body=b"bad byte \xff here",
        )
        ledger.append(
            sid,
            "projection",
            {"call_ids": ["call_7"], "reason": "pressure", "before_tokens": 9, "after_tokens": 3},
        )
        ledger.append(
            sid,
            "checkpoint",
            {
                "number": 1,
                "title": "after listing",
                "text": "CHECKPOINT BODY",
                "before_tokens": 9,
                "after_tokens": 2,
                "covers_through_seq": 5,
                "tail_from_seq": 6,
            },
        )
        other = ledger.create_session(cwd="/elsewhere", model="model-y", session_id=OTHER)
        ledger.set_status(other, "finished")
    return {"sid": sid, "other": other}


def test_sessions_lists_every_session(recorded: dict[str, str]) -> None:
    assert comal("sessions").stderr.startswith("no sessions recorded in ")  # none here
    plain = comal("sessions", "--all")
    assert plain.returncode == 0, plain.stderr
    header, first, second = plain.stdout.splitlines()
    assert header.split() == ["ID", "AGE", "STATUS", "CWD", "TITLE"]
    # Short ids: the random tails differ only in their last character, so 12 are shown.
    assert first.split()[0] == "00000000000b"
    assert second.split()[0] == "00000000000a"
    assert {"/work/project", "answered", "fix", "tests"} <= set(second.split())
    assert {"/elsewhere", "finished"} <= set(first.split())

    as_json = comal("sessions", "--all", "--json")
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert [row["id"] for row in rows] == [recorded["other"], recorded["sid"]]
    assert [row["short_id"] for row in rows] == ["00000000000b", "00000000000a"]
    assert rows[1]["entries"] == 7
    assert rows[1]["cwd"] == "/work/project"
    assert rows[1]["last_activity_at"] >= rows[1]["started_at"]


def test_the_title_is_the_first_ask(recorded: dict[str, str]) -> None:
    with Ledger.open(load_config().ledger_path) as ledger:
        ledger.append(
            recorded["other"], "message.user", {"message": message_to_json(user_text("deploy it"))}
        )
    first = comal("sessions", "--all").stdout.splitlines()[1]
    assert first.split()[-2:] == ["deploy", "it"]


def test_show_prints_a_readable_transcript(recorded: dict[str, str]) -> None:
    result = comal("show", "00000000000a")  # the short id
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"session 00000000000a ({recorded['sid']}) · answered")
    assert "▶ ask" in out
    assert "run ls" in out
    assert "\n◀ answer\n" in out
    assert "Listing the files." in out
    assert out.count("ls -la") == 1  # each call once, as its command
    assert "    → shell ls -la\n" in out
    assert "  ← shell ok · exit 0 · 11,600 bytes · E1\n" in out
    assert "line 00019 of a long listing" in out
    assert "line 00020 of a long listing" not in out
    read_on = "comal evidence 00000000000a E1 --offset 580"
    assert f"    … 380 more lines: {read_on}\n" in out
    rest = comal(*read_on.split()[1:])
    assert rest.returncode == 0, rest.stderr
    assert rest.stdout.startswith("line 00020 of a long listing\n")
    assert "bad byte \ufffd here" in out
    assert "── context: 1 output replaced by references to make room (~9 → ~3 tokens)" in out
    assert "══ checkpoint 1: after listing" in out
    assert "CHECKPOINT BODY" in out
    for internal in ("evt_", "seq", "call_7", "sha256", "model-x · tool_calls"):
        assert internal not in out.split("\n", 2)[2], internal
    verbose = comal("show", "00000000000a", "--verbose").stdout
    assert "← shell ok · exit 0 · 11,600 bytes · E1 · receipt evt_" in verbose
    assert "    → shell ls -la  [call_7]\n" in verbose
    assert "◀ answer  (model-x · tool_calls)" in verbose
    assert "session.started" not in out  # bookkeeping stays out of the transcript…
    assert "session.started" in comal("show", "0199AAAA", "--all").stdout  # …unless asked


def test_show_json_is_complete(recorded: dict[str, str]) -> None:
    result = comal("show", recorded["sid"], "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["session"]["id"] == recorded["sid"]
    entries = shown["entries"]
    assert [e["kind"] for e in entries] == [
        "session.started",
        "message.user",
        "message.assistant",
        "tool.result",
        "tool.result",
        "projection",
        "checkpoint",
    ]
    assert entries[3]["body_text"] == LONG_OUTPUT.decode()
    assert entries[4]["body_text"].endswith("bad byte \ufffd here")
    assert entries[2]["payload"]["message"]["parts"][1]["arguments"] == {"command": "ls -la"}
    with Ledger.open(load_config().ledger_path) as ledger:
        stored = ledger.entries(recorded["sid"])
    assert [e["content_hash"] for e in entries] == [e.content_hash for e in stored]


def test_prefix_errors_are_clear(recorded: dict[str, str]) -> None:
    unknown = comal("show", "ffffffff")
    assert unknown.returncode != 0
    assert unknown.stdout == ""
    assert "UNKNOWN_SESSION" in unknown.stderr
    assert "ffffffff" in unknown.stderr

    ambiguous = comal("show", "0199aaa")
    assert ambiguous.returncode != 0
    assert ambiguous.stdout == ""
    assert "AMBIGUOUS_SESSION" in ambiguous.stderr
    assert recorded["sid"] in ambiguous.stderr
    assert recorded["other"] in ambiguous.stderr


def test_verify_passes_then_reports_tampering(recorded: dict[str, str]) -> None:
    whole = comal("verify")
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert whole.stdout.startswith("ok:")
    one = comal("verify", "0199aaaa")
    assert one.returncode == 0, one.stdout + one.stderr
    assert "7 entries and 2 blobs" in one.stdout

    conn = sqlite3.connect(load_config().ledger_path, isolation_level=None)
    conn.execute("DROP TRIGGER entries_no_update")
    conn.execute("""UPDATE entries SET payload = '{"forged":true}' WHERE kind = 'projection'""")
    conn.close()
    broken = comal("verify")
    assert broken.returncode == 3  # a ledger error, as the README table says
    assert "content hash mismatch" in broken.stdout
    assert "FAILED" in broken.stdout
    report = json.loads(comal("verify", "--json").stdout)
    assert report["ok"] is False
    assert len(report["problems"]) == 1


def test_a_newer_ledger_is_refused_untouched(recorded: dict[str, str]) -> None:
    path = load_config().ledger_path
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    before = path.read_bytes()
    for args in (("sessions",), ("show", recorded["sid"]), ("verify",)):
        result = comal(*args)
        assert result.returncode != 0
        assert "LEDGER_SCHEMA_TOO_NEW" in result.stderr
        assert result.stdout == ""
    assert path.read_bytes() == before


def test_an_empty_ledger_lists_nothing(tmp_path: Path) -> None:
    result = comal("sessions", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
