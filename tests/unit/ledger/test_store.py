"""Ledger store behaviour: sessions, appends, reads, blobs, prefixes and bad input."""

from __future__ import annotations

import uuid

import pytest

from comal.errors import (
    AmbiguousSessionError,
    LedgerError,
    UnknownEntryError,
    UnknownSessionError,
)
from comal.ledger import Ledger
from comal.messages import JSONObject, canonical_json, digest_bytes


def test_appends_read_back_in_order_with_filters(ledger: Ledger) -> None:
    sid = ledger.create_session(cwd="/w", model="m")
    other = ledger.create_session(cwd="/w")
    first = ledger.append(sid, "message.user", {"text": "one"})
    ledger.append(other, "message.user", {"text": "elsewhere"})
    second = ledger.append(sid, "tool.result", {"call_id": "c1"}, body=b"out")
    third = ledger.append(sid, "message.user", {"text": "three"})

    assert ledger.entries(sid) == [first, second, third]
    assert ledger.entries(sid, after_seq=first.seq) == [second, third]
    assert ledger.entries(sid, kinds={"tool.result"}) == [second]
    assert ledger.entries(sid, kinds=[]) == []
    assert ledger.entry(second.id) == second
    assert first.seq < second.seq < third.seq
    assert first.id.startswith("evt_")


def test_content_hash_is_kind_nul_canonical_payload(ledger: Ledger) -> None:
    sid = ledger.create_session(cwd="/w")
    payload: JSONObject = {"b": [1, 2.5, None], "a": "é"}
    entry = ledger.append(sid, "message.user", payload)
    expected = digest_bytes(b"message.user\0" + canonical_json(payload).encode("ascii"))
    assert entry.content_hash == expected
    reordered: JSONObject = {"a": "é", "b": [1, 2.5, None]}
    assert ledger.append(sid, "message.user", reordered).content_hash == expected


def test_body_is_a_blob_stored_once(ledger: Ledger) -> None:
    sid = ledger.create_session(cwd="/w")
    data = b"\x00\xff binary \xc3"
    one = ledger.append(sid, "tool.result", {"call_id": "a"}, body=data)
    two = ledger.append(sid, "tool.result", {"call_id": "b"}, body=data)

    assert one.payload["body"] == {"blob": digest_bytes(data), "size_bytes": len(data)}
    assert one.body_hash == two.body_hash == digest_bytes(data)
    assert ledger.body(one) == data
    assert ledger.body(ledger.append(sid, "message.user", {})) is None
    report = ledger.verify()
    assert (report.ok, report.blobs) == (True, 1)


def test_put_blob_then_reference_it(ledger: Ledger) -> None:
    sid = ledger.create_session(cwd="/w")
    digest = ledger.put_blob(b"shared")
    assert ledger.put_blob(b"shared") == digest
    entry = ledger.append(sid, "tool.result", {"body": {"blob": digest, "size_bytes": 6}})
    assert ledger.body(entry) == b"shared"
    with pytest.raises(LedgerError, match="no blob"):
        ledger.blob("sha256:" + "0" * 64)


@pytest.mark.parametrize(
    ("kind", "payload", "body", "message"),
    [
        ("Tool.Result", {}, None, "invalid entry kind"),
        ("tool..result", {}, None, "invalid entry kind"),
        ("note", {"x": float("nan")}, None, "not JSON"),
        ("note", {"x": float("inf")}, None, "not JSON"),
        ("note", {"x": object()}, None, "not JSON"),
        ("note", {"body": "text"}, b"bytes", "already has a 'body'"),
        ("note", {"body": {"blob": "sha256:" + "1" * 64, "size_bytes": 1}}, None, "lacks"),
        ("note", {"body": "text"}, None, "must be"),
    ],
)
def test_bad_appends_are_refused_and_record_nothing(
    ledger: Ledger, kind: str, payload: dict[str, object], body: bytes | None, message: str
) -> None:
    sid = ledger.create_session(cwd="/w")
    kept = ledger.append(sid, "message.user", {"text": "kept"})
    with pytest.raises(LedgerError, match=message):
        ledger.append(sid, kind, payload, body=body)  # type: ignore[arg-type]
    assert ledger.entries(sid) == [kept]
    assert ledger.verify().ok


def test_unknown_ids_raise_typed_errors(ledger: Ledger) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(UnknownSessionError):
        ledger.append(missing, "message.user", {})
    with pytest.raises(UnknownSessionError):
        ledger.entries(missing)
    with pytest.raises(UnknownSessionError):
        ledger.session(missing)
    with pytest.raises(UnknownSessionError):
        ledger.verify(missing)
    with pytest.raises(UnknownEntryError):
        ledger.entry("evt_missing")
    with pytest.raises(UnknownSessionError):
        ledger.create_session(cwd="/w", parent_id=missing)


def test_sessions_children_status_and_title(ledger: Ledger) -> None:
    parent = ledger.create_session(cwd="/w", model="m1", title="first", source="import:codex")
    child = ledger.create_session(cwd="/w", parent_id=parent)
    newest = ledger.create_session(cwd="/other")
    ledger.append(parent, "message.user", {})
    ledger.append(parent, "message.user", {})

    assert [s.id for s in ledger.sessions()] == [newest, child, parent]
    assert ledger.children(parent) == [child]
    assert ledger.children(child) == []
    info = ledger.session(parent)
    assert (info.cwd, info.model, info.title, info.source) == ("/w", "m1", "first", "import:codex")
    assert (info.status, info.entries, info.parent_id) == ("active", 2, None)
    assert info.last_activity_at >= info.created_at
    assert ledger.session(child).parent_id == parent

    ledger.set_status(parent, "finished")
    ledger.set_title(parent, "renamed")
    assert (ledger.session(parent).status, ledger.session(parent).title) == ("finished", "renamed")
    with pytest.raises(LedgerError, match="unknown session status"):
        ledger.set_status(parent, "done")


def test_a_title_spanning_lines_is_stored_as_one_line(ledger: Ledger) -> None:
    prompt = "Very thorough exploration. I need:\n\n1. How  it renders\n\t2. Why"
    session = ledger.create_session(cwd="/w", title=prompt)
    assert (
        ledger.session(session).title
        == "Very thorough exploration. I need: 1. How it renders 2. Why"
    )
    ledger.set_title(session, "  renamed\nagain ")
    assert ledger.session(session).title == "renamed again"


def test_latest_session_prefers_recent_activity_and_skips_children(ledger: Ledger) -> None:
    assert ledger.latest_session("/w") is None
    old = ledger.create_session(cwd="/w")
    new = ledger.create_session(cwd="/w")
    ledger.create_session(cwd="/w", parent_id=old)
    assert ledger.latest_session("/w") == new
    ledger.append(old, "message.user", {})
    assert ledger.latest_session("/w") == old
    assert ledger.latest_session("/elsewhere") is None


def test_given_session_ids_are_checked(ledger: Ledger) -> None:
    given = str(uuid.uuid4())
    assert ledger.create_session(cwd="/w", session_id=given.upper()) == given
    with pytest.raises(LedgerError, match="already exists"):
        ledger.create_session(cwd="/w", session_id=given)
    with pytest.raises(LedgerError, match="must be a UUID"):
        ledger.create_session(cwd="/w", session_id="not-a-uuid")


def test_resolve_prefixes_like_git(ledger: Ledger) -> None:
    a = ledger.create_session(cwd="/a", session_id="abcd0000-0000-4000-8000-000000000001")
    b = ledger.create_session(cwd="/b", session_id="abcd0000-0000-4000-8000-000000000002")
    c = ledger.create_session(cwd="/c", session_id="ef000000-0000-4000-8000-000000000003")

    assert ledger.resolve("ef") == c
    assert ledger.resolve("EF00") == c
    assert ledger.resolve(a) == a
    assert ledger.resolve("abcd0000-0000-4000-8000-000000000002") == b
    with pytest.raises(AmbiguousSessionError) as ambiguous:
        ledger.resolve("abcd")
    assert a in ambiguous.value.message
    assert b in ambiguous.value.message
    with pytest.raises(UnknownSessionError, match="no session id or short id starts with"):
        ledger.resolve("0123")
    with pytest.raises(UnknownSessionError, match="not a session id"):
        ledger.resolve("xyz")
    with pytest.raises(UnknownSessionError):
        ledger.resolve("")


def test_data_survives_reopening(ledger_target: str) -> None:
    with Ledger.open(ledger_target, durable=False) as first:
        sid = first.create_session(cwd="/w")
        written = first.append(sid, "message.user", {"text": "kept"}, body=b"\xff")
    with Ledger.open(ledger_target) as second:
        assert second.entries(sid) == [written]
        assert second.body(written) == b"\xff"
        assert second.session(sid).entries == 1


def test_close_is_idempotent(ledger_target: str) -> None:
    ledger = Ledger.open(ledger_target)
    sid = ledger.create_session(cwd="/w")
    ledger.acquire_lock(sid)
    ledger.close()
    ledger.close()  # a second close is a no-op, not an error
    with Ledger.open(ledger_target) as again:
        # The first close released the lock and kept what was written.
        assert again.lock_holder(sid) is None
        assert again.session(sid).id == sid
