"""Short session ids: cut from the UUID's random tail, shortest unique (≥ 8), accepted
everywhere beside full ids and prefixes."""

from __future__ import annotations

import pytest

from comal.errors import AmbiguousSessionError, UnknownSessionError
from comal.ids import SHORT_ID_MIN_CHARS, session_tail, shortest_unique, uuid7
from comal.ledger import Ledger


def test_sessions_started_together_get_distinct_eight_character_ids(ledger: Ledger) -> None:
    # Ten sessions in one millisecond share their first 12 hex digits (the timestamp)…
    ids = [
        ledger.create_session(cwd="/w", session_id=str(uuid7(now_ms=1_700_000_000_000)))
        for _ in range(10)
    ]
    with pytest.raises(AmbiguousSessionError):
        ledger.resolve(ids[0][:8])
    shorts = ledger.short_ids()
    # …but their short ids are 8 characters, distinct, and each names its session.
    assert len({shorts[i] for i in ids}) == 10
    for sid in ids:
        assert len(shorts[sid]) == SHORT_ID_MIN_CHARS
        assert shorts[sid] == session_tail(sid)[:8]
        assert ledger.resolve(shorts[sid]) == sid
        assert ledger.resolve(shorts[sid].upper()) == sid
        assert ledger.resolve(sid) == sid


def test_a_collision_lengthens_only_the_colliding_ids() -> None:
    lengths = shortest_unique(["abcdef012345", "abcdef019999", "123456789abc"])
    assert lengths == {"abcdef012345": 9, "abcdef019999": 9, "123456789abc": 8}


def test_short_ids_are_stable_as_sessions_are_added(ledger: Ledger) -> None:
    first = ledger.create_session(cwd="/w")
    before = ledger.short_id(first)
    for _ in range(20):
        ledger.create_session(cwd="/w")
    assert ledger.resolve(before) == first


def test_unknown_and_ambiguous_short_ids(ledger: Ledger) -> None:
    a = ledger.create_session(cwd="/w", session_id="0199aaaa-0000-7000-8000-aaaa00000001")
    ledger.create_session(cwd="/w", session_id="0199aaab-0000-7000-8000-aaaa00000002")
    assert ledger.short_id(a) == "aaaa00000001"
    with pytest.raises(AmbiguousSessionError):
        ledger.resolve("aaaa0000")
    with pytest.raises(UnknownSessionError):
        ledger.resolve("bbbb0000")
