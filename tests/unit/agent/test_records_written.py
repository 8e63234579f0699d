"""What the agent writes today has the shape the fixture ledger's writers gave each kind.

tests/fixtures/ledgers/sessions.db was written before payloads were built with the records. A
turn run now (tools, a board, finish_call, a refused permission, an invalid call) must write,
for every kind, payloads with the same keys holding values of the same JSON types, and each
must be its record's round trip.
"""

from __future__ import annotations

from pathlib import Path

from comal.agent.core.loop import run_turn
from comal.ledger import Ledger
from comal.ledger.records import RECORDS
from comal.messages import JSONObject, JSONValue
from comal.providers.scripted import ScriptedTurn
from tests.unit.ledger.fixture_readers import FIXTURE
from tests.unit.recovery.conftest import Bench, call


def _shape(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


ADDED_SINCE = {"lock.acquired": {"host_id"}, "lock.reclaimed": {"host_id", "reason"}}
"""Optional fields records gained after the fixture was written (leases: docs/ledger.md)."""


def _shapes(payloads: list[JSONObject], kind: str = "") -> set[tuple[tuple[str, str], ...]]:
    added = ADDED_SINCE.get(kind, set())
    return {tuple(sorted((k, _shape(v)) for k, v in p.items() if k not in added)) for p in payloads}


def _fixture_payloads(tmp_path: Path) -> dict[str, list[JSONObject]]:
    copy = tmp_path / "old.db"
    copy.write_bytes(FIXTURE.read_bytes())
    found: dict[str, list[JSONObject]] = {}
    with Ledger.open(copy) as ledger:
        for s in ledger.sessions():
            for e in ledger.entries(s.id, own=True, rewound=True):
                found.setdefault(e.kind, []).append(e.payload)
    return found


async def test_a_turn_writes_what_the_old_writers_wrote(bench: Bench, tmp_path: Path) -> None:
    (bench.workspace / "notes.txt").write_text("remember the milk\n")
    board = {"set": [{"id": "1", "text": "notes read"}]}
    s, _ = bench.open(
        [
            ScriptedTurn(
                tool_calls=(
                    call("b1", "Board", board),
                    call("r1", "Read", {"path": "notes.txt"}),
                    call("w1", "Write", {"path": "out.txt", "content": "milk\n"}),
                    call("x1", "Bash", {"command": "echo hi"}),
                )
            ),
            ScriptedTurn(
                tool_calls=(call("b2", "Board", {"update": [{"id": "1", "status": "done"}]}),)
            ),
            ScriptedTurn(tool_calls=(call("f1", "finish_call", {"answer": "milk"}),)),
            "Done.",
        ]
    )
    await run_turn(s, "read my notes")
    old = _fixture_payloads(tmp_path)
    written: dict[str, list[JSONObject]] = {}
    for entry in bench.ledger.entries(s.id):
        record = RECORDS[entry.kind].from_entry(entry)
        assert record.to_payload() == entry.payload, entry.kind
        written.setdefault(entry.kind, []).append(entry.payload)
    assert {"tool.started", "tool.result", "board.updated", "session.finished"} <= set(written)
    for kind, payloads in written.items():
        assert _shapes(payloads, kind) <= _shapes(old[kind]), kind
