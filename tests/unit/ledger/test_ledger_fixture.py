"""A ledger written by an earlier Comal reads the same: tests/fixtures/ledgers/sessions.db.

The fixture was recorded through the public paths (scripts/make_ledger_fixture.py) and the
readers' results with the code of that day (fixture_readers.py wrote sessions.expected.json).
"""

from __future__ import annotations

import json

from tests.unit.ledger.fixture_readers import EXPECTED, FIXTURE, observe


def test_the_readers_see_an_old_ledger_as_they_did_when_it_was_written() -> None:
    assert FIXTURE.is_file()
    expected = json.loads(EXPECTED.read_text())
    seen = json.loads(json.dumps(observe()))
    assert sorted(seen) == sorted(expected)
    for session_id, readers in expected.items():
        for reader, value in readers.items():
            assert seen[session_id][reader] == value, (session_id, reader)
