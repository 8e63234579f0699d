"""What the readers make of tests/fixtures/ledgers/sessions.db, as one JSON value.

`observe` runs the real readers over every session of the fixture ledger: the `/state` view,
the `/context` report and the view a resume would send, the recorded and open calls, the work
state a checkpoint summarises, a child's receipt, the cost, the timeline and EvidenceRead of
every tool result. tests/unit/ledger/test_ledger_fixture.py compares it with
`sessions.expected.json`, which this module wrote with the code that wrote the ledger:

    .venv/bin/python -m tests.unit.ledger.fixture_readers --write
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path

from comal.agent.children.receipts import recorded_receipt
from comal.agent.features.state import board_of, recorded_calls, session_state, state_to_json
from comal.cli.cmd_context import recorded_engine
from comal.cli.timeline import timeline_of
from comal.config import load_config
from comal.context.relief.workstate import work_state
from comal.evidence.read import read_evidence
from comal.ledger.store import Ledger
from comal.messages import JSONValue, message_to_json
from comal.session import (
    cost_json,
    final_answer,
    open_calls,
    session_cost,
    uncertain_calls,
    usage_totals,
)

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "ledgers" / "sessions.db"
EXPECTED = FIXTURE.with_name("sessions.expected.json")


def _plain(value: object) -> JSONValue:
    """A JSON value for a reader's result (dataclasses by field, tuples as lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _session(ledger: Ledger, session_id: str, home: Path) -> JSONValue:
    config = load_config(env={"COMAL_HOME": str(home)}, cwd=home, lenient=True)
    entries = ledger.entries(session_id)
    engine = recorded_engine(ledger, session_id, config)
    view = engine.view()
    evidence = {}
    for entry in ledger.entries(session_id, kinds=("tool.result",)):
        page = read_evidence(ledger, session_id, entry.id)
        evidence[entry.id] = _plain(page)
    return {
        "state": state_to_json(session_state(ledger, session_id, config.prices)),
        "context": engine.report().to_json(),
        "view": {
            "messages": [message_to_json(m) for m in view.messages],
            "tools": [spec.name for spec in view.tools],
            "estimated_tokens": view.estimated_tokens,
            "output_reserve": view.output_reserve,
            "checkpoint": view.checkpoint_number,
        },
        "recorded_calls": _plain(recorded_calls(entries)),
        "open_calls": _plain(open_calls(entries)),
        "uncertain_calls": _plain(uncertain_calls(entries)),
        "board": _plain(board_of(entries)),
        "final_answer": final_answer(entries),
        "usage": _plain(usage_totals(entries)),
        "work_state": _plain(work_state(entries, ledger)),
        "receipt": _plain(recorded_receipt(ledger, session_id)),
        "cost": cost_json(session_cost(entries, config.prices)),
        "timeline": _plain(timeline_of(entries, engine.window()[0], int(engine.window()[0] * 0.8))),
        "evidence": evidence,
    }


def observe(fixture: Path = FIXTURE) -> JSONValue:
    """Every reader's result for every session of a copy of `fixture`."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        shutil.copyfile(fixture, home / "ledger.db")
        with Ledger.open(home / "ledger.db") as ledger:
            ids = sorted(s.id for s in ledger.sessions())
            return {sid: _session(ledger, sid, home) for sid in ids}


def main() -> None:
    text = json.dumps(observe(), indent=1, sort_keys=True, ensure_ascii=True) + "\n"
    if "--write" in sys.argv:
        EXPECTED.write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
