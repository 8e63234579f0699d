"""Every importer whose format keeps time plans each entry with the time it was recorded.

The replay reads the idle gaps between model calls from these times (a prompt cache expires
while idle); each expectation below is computed from the file itself, independently of the
importer.
"""

from __future__ import annotations

import json
from pathlib import Path

from comal.importers import parse_file, parse_sessions
from comal.importers.plan import recorded_ms
from tests.unit.importers.conftest import FIXTURES, trajectory

SPOTTER = "claude-code-2_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
MINI_V2 = "mini-swe-agent-v2_gpt-5-mini/astropy__astropy-14369.traj.json"
OPENHANDS = "openhands_multi-swe-bench/output.jsonl"


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_claude_code_response_is_recorded_when_its_last_block_is() -> None:
    path = trajectory(SPOTTER)
    last_block: dict[str, int] = {}
    for record in _records(path):
        message = record.get("message")
        if record.get("type") == "assistant" and not record.get("isSidechain"):
            assert isinstance(message, dict)
            stamp = recorded_ms(record["timestamp"])
            assert stamp is not None
            last_block[str(message["id"])] = max(last_block.get(str(message["id"]), 0), stamp)
    parsed = parse_file(path)
    responses = [e for e in parsed.entries if e.kind == "message.assistant"]
    assert len(responses) == len(last_block)
    assert [e.at_ms for e in responses] == list(last_block.values())
    # Results and the person's messages carry their own record's time.
    timed = [e for e in parsed.entries if e.kind in ("tool.result", "message.user")]
    assert timed
    assert all(e.at_ms is not None for e in timed)


def test_a_codex_rollout_times_its_entries_from_its_lines() -> None:
    path = next((FIXTURES / "codex").glob("rollout-*.jsonl"))
    stamps = {recorded_ms(r["timestamp"]) for r in _records(path)}
    parsed = parse_file(path)
    conversation = [
        e for e in parsed.entries if e.kind in ("message.user", "message.assistant", "tool.result")
    ]
    assert conversation
    assert all(e.at_ms in stamps for e in conversation)
    times = [e.at_ms for e in conversation if e.at_ms is not None]
    assert times == sorted(times)


def test_a_mini_swe_agent_v2_message_is_timed_by_its_extra_timestamp() -> None:
    path = trajectory(MINI_V2)
    messages = json.loads(path.read_text())["messages"]
    expected = [recorded_ms(m["extra"]["timestamp"]) for m in messages if m["role"] == "assistant"]
    parsed = parse_file(path)
    got = [e.at_ms for e in parsed.entries if e.kind == "message.assistant"]
    assert got == expected
    assert None not in got


def test_openhands_events_are_timed() -> None:
    (first, *_) = parse_sessions(trajectory(OPENHANDS))
    responses = [e for e in first.entries if e.kind == "message.assistant"]
    assert responses
    assert all(e.at_ms is not None for e in responses)
    times = [e.at_ms for e in first.entries if e.at_ms is not None]
    assert times == sorted(times)


def test_a_format_without_time_plans_none() -> None:
    path = trajectory("swe-agent_demos/ctf__crypto__BabyEncryption.traj")
    assert {e.at_ms for e in parse_file(path).entries} == {None}
