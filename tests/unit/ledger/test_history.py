"""A session's history: forks read their parent's entries through the fork point, rewinds hide."""

from __future__ import annotations

import pytest

from comal.errors import EvidenceAccessError, LedgerError
from comal.evidence.read import resolve_entry
from comal.ledger import Ledger
from comal.testing.sessions import SessionBuilder


def _texts(ledger: Ledger, session_id: str) -> list[str]:
    return [
        str(e.payload["message"])
        for e in ledger.entries(session_id, kinds=("message.user", "message.assistant"))
    ]


def test_a_fork_of_a_fork_reads_each_parent_through_its_point(ledger: Ledger) -> None:
    sb = SessionBuilder(ledger)
    sb.user("one")
    (early,) = sb.turn("looking", [("Bash", {"command": "ls"}, "early output", 0)])
    point = sb.answer("first")
    sb.append("lock.acquired", {"pid": 1})
    sb.user("two")
    (late,) = sb.turn("again", [("Bash", {"command": "ls"}, "late output", 0)])

    fork = ledger.fork_session(sb.session_id, through_seq=point.seq)
    ledger.append(fork, "message.user", {"message": {"role": "user", "parts": []}})
    inner = ledger.fork_session(fork, through_seq=ledger.entries(fork)[-1].seq)

    history = ledger.entries(fork)
    assert [e.seq for e in history] == sorted(e.seq for e in history)
    assert history[-2].kind == "session.forked"
    assert point.id in [e.id for e in history]
    assert late.id not in [e.id for e in history]
    assert "lock.acquired" not in [e.kind for e in history]  # the parent's process, not ours
    assert len(ledger.entries(inner)) == len(history) + 1
    assert ledger.entries(fork, own=True)[0].kind == "session.forked"
    assert ledger.forks(sb.session_id) == [fork]
    assert ledger.session(inner).fork_of == fork

    assert resolve_entry(ledger, inner, early.id) == early
    with pytest.raises(EvidenceAccessError):
        resolve_entry(ledger, inner, late.id)  # the parent's, after the fork point


def test_a_fork_point_must_be_in_the_parents_history(ledger: Ledger) -> None:
    sb = SessionBuilder(ledger)
    other = SessionBuilder(ledger)
    entry = other.user("elsewhere")
    with pytest.raises(LedgerError, match="not an entry"):
        ledger.fork_session(sb.session_id, through_seq=entry.seq)


def test_a_conversation_rewind_hides_what_it_went_back_over(ledger: Ledger) -> None:
    sb = SessionBuilder(ledger)
    sb.user("one")
    kept = sb.answer("first")
    sb.user("two")
    sb.answer("second")
    before = _texts(ledger, sb.session_id)
    sb.append("session.rewound", {"to_seq": kept.seq, "conversation": False})
    assert _texts(ledger, sb.session_id) == before  # a files-only rewind hides nothing

    rewind = sb.append("session.rewound", {"to_seq": kept.seq, "conversation": True})
    sb.user("three")

    assert len(_texts(ledger, sb.session_id)) == 3
    assert "two" not in str(_texts(ledger, sb.session_id))
    assert ledger.entries(sb.session_id, after_seq=kept.seq)[0].id == rewind.id
    assert len(ledger.entries(sb.session_id, own=True)) == 8  # nothing deleted
