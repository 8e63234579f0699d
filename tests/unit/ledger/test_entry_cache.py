"""Reads served from the decoded-entry cache equal fresh reads, whoever appended."""

from __future__ import annotations

import json
import re

import pytest

from comal.errors import LedgerError, UnknownSessionError
from comal.ledger import Ledger
from comal.ledger.canonical import decode_payload
from comal.ledger.entry_cache import MAX_SESSIONS
from comal.ledger.history import history
from tests.pg_support import raw_conn


def _fresh(path: str, session_id: str, after_seq: int = 0) -> list[object]:
    with Ledger.open(path, durable=False) as other:
        return list(other.entries(session_id, after_seq=after_seq, kinds=None))


def test_cached_reads_see_every_append_of_this_and_other_connections(ledger_target: str) -> None:
    path = ledger_target
    with Ledger.open(path, durable=False) as ledger, Ledger.open(path, durable=False) as peer:
        sid = ledger.create_session(cwd="/w")
        first = ledger.append(sid, "message.user", {"text": "one"})
        assert ledger.entries(sid) == [first]
        mine = ledger.append(sid, "tool.result", {"call_id": "c1"}, body=b"out")
        assert ledger.entries(sid) == [first, mine]
        theirs = peer.append(sid, "message.user", {"text": "from another connection"})
        assert ledger.entries(sid) == [first, mine, theirs] == _fresh(path, sid)
        assert ledger.entries(sid, after_seq=first.seq) == [mine, theirs]
        assert ledger.entries(sid, after_seq=theirs.seq) == []
        assert ledger.entries(sid, kinds={"tool.result"}) == [mine]


def test_a_returned_list_is_the_callers_own(ledger: Ledger) -> None:
    sid = ledger.create_session(cwd="/w")
    entry = ledger.append(sid, "message.user", {"text": "one"})
    got = ledger.entries(sid)
    got.clear()
    assert ledger.entries(sid) == [entry]


def test_many_sessions_read_in_turn_stay_exact(ledger: Ledger) -> None:
    ids = [ledger.create_session(cwd="/w") for _ in range(MAX_SESSIONS + 2)]
    for round_ in range(3):
        for n, sid in enumerate(ids):
            ledger.append(sid, "message.user", {"text": f"{round_}-{n}"})
            texts = [e.payload["text"] for e in ledger.entries(sid)]
            assert texts == [f"{r}-{n}" for r in range(round_ + 1)]


def test_unknown_session_is_refused_before_and_after_caching(ledger: Ledger) -> None:
    with pytest.raises(UnknownSessionError):
        ledger.entries("0190c8a4-0000-7000-8000-000000000000")
    sid = ledger.create_session(cwd="/w")
    ledger.entries(sid)
    with pytest.raises(UnknownSessionError):
        ledger.entries("0190c8a4-0000-7000-8000-000000000000", after_seq=3)


def test_a_failed_append_leaves_nothing_behind(ledger: Ledger) -> None:
    sid = ledger.create_session(cwd="/w")
    ledger.entries(sid)
    with pytest.raises(LedgerError):
        ledger.append(sid, "tool.result", {"body": {"blob": "sha256:" + "0" * 64}})
    assert ledger.entries(sid) == []


@pytest.mark.parametrize(
    "text",
    ['{"a":1}', ' {"a":1}', '{"a":1}\n', '{"a":"\\udc80","b":[1,2.5,null,true]}', '{"a":NaN}'],
)
def test_payload_decoding_matches_json_loads(text: str) -> None:
    assert repr(decode_payload(text)) == repr(json.loads(text))


@pytest.mark.parametrize("text", ['{"a":1}x', "", "{", '{"a":1,}'])
def test_payload_decoding_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError, match=re.escape(str(expected.value))):
        decode_payload(text)


@pytest.mark.parametrize("text", ["[1]", "1", '"a"'])
def test_a_payload_must_be_an_object(text: str) -> None:
    with pytest.raises(ValueError, match="not a JSON object"):
        decode_payload(text)


def test_histories_of_forks_and_rewinds_are_read_as_without_the_cache(ledger_target: str) -> None:
    with Ledger.open(ledger_target, durable=False) as ledger, raw_conn(ledger_target) as raw:
        sid = ledger.create_session(cwd="/w")
        first = ledger.append(sid, "message.user", {"text": "one"})
        ledger.append(sid, "message.user", {"text": "two"})
        fork = ledger.fork_session(sid, through_seq=first.seq)
        ledger.append(fork, "message.user", {"text": "in the fork"})

        def same(session_id: str) -> None:
            for rewound in (False, True):
                expected = history(raw, session_id, 0, None, rewound=rewound)
                assert ledger.entries(session_id, rewound=rewound) == expected
            own = ledger.entries(session_id, own=True)
            assert own == [e for e in expected if e.session_id == session_id]

        same(sid)
        same(fork)
        ledger.append(sid, "session.rewound", {"conversation": True, "to_seq": first.seq})
        ledger.append(sid, "message.user", {"text": "after the rewind"})
        same(sid)
        assert [e.payload.get("text") for e in ledger.entries(sid)][-1] == "after the rewind"
        assert "two" not in [e.payload.get("text") for e in ledger.entries(sid)]
