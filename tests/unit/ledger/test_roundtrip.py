"""Property: any sequence of appends reads back identical, and content hashes are stable."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.ledger import Ledger
from comal.messages import JSONObject, canonical_json, digest_bytes
from tests.unit.ledger.json_strategies import json_values, texts

_payloads: st.SearchStrategy[JSONObject] = st.dictionaries(
    texts.filter(lambda key: key != "body"), json_values, max_size=5
)
_kinds = st.sampled_from(["message.user", "message.assistant", "tool.result", "warning", "x.y_z"])
_bodies = st.one_of(
    st.none(),
    st.binary(max_size=300),
    st.sampled_from([b"", b"\xff\xfe\x00", b"\xc3\x28", b"\xed\xa0\x80", "é".encode()]),
)
_appends = st.lists(st.tuples(st.integers(0, 2), _kinds, _payloads, _bodies), max_size=12)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(appends=_appends)
def test_any_appends_read_back_identical(
    ledger_target: str, appends: list[tuple[int, str, JSONObject, bytes | None]]
) -> None:
    # One ledger for every example: each writes and checks sessions of its own.
    # Durability is covered by the crash test; here only the encoding matters.
    with Ledger.open(ledger_target, durable=False) as ledger:
        sessions = [ledger.create_session(cwd=f"/w{i}") for i in range(3)]
        written = [
            (ledger.append(sessions[which], kind, payload, body=body), payload, body)
            for which, kind, payload, body in appends
        ]
    with Ledger.open(ledger_target) as reopened:
        read = {sid: reopened.entries(sid) for sid in sessions}
        for entry, payload, body in written:
            (back,) = [e for e in read[entry.session_id] if e.seq == entry.seq]
            assert back == entry
            assert reopened.body(back) == body
            expected = dict(payload)
            if body is not None:
                expected["body"] = {"blob": digest_bytes(body), "size_bytes": len(body)}
            assert back.payload == expected
            assert canonical_json(back.payload) == canonical_json(expected)
            assert back.content_hash == digest_bytes(
                back.kind.encode() + b"\0" + canonical_json(expected).encode("ascii")
            )
        assert sum(len(v) for v in read.values()) == len(appends)
        assert reopened.verify().ok
        # The same kind and payload hash the same whenever they are appended again.
        for entry, payload, body in written[:3]:
            again = reopened.append(entry.session_id, entry.kind, payload, body=body)
            assert again.content_hash == entry.content_hash
