"""Typed records: lossless for what Comal writes, tolerant of damage, and the docs table.

The round trip runs over tests/fixtures/ledgers/sessions.db, a ledger the CLI wrote through
its public paths before the writers used the records: every payload it holds must be exactly
what its record gives back, so building payloads with records leaves ledger bytes as they were.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from comal.ledger import Ledger
from comal.ledger.canonical import content_hash, encode_payload
from comal.ledger.entry import Entry
from comal.ledger.records import (
    RECORDS,
    CompactRequested,
    LockReclaimed,
    PressureDeferred,
    ProviderResent,
    Record,
    RecordedWindow,
    SessionConfigured,
    SessionPlugins,
    ToolResult,
    ToolStartedRecord,
    UserShell,
    nested,
    with_table,
)
from comal.messages import JSONObject, JSONValue
from tests.unit.ledger.fixture_readers import FIXTURE, ROOT

NOT_IN_FIXTURE = {
    "compact.requested",
    "session.configured",
    "session.plugins",
    "pressure.deferred",
    "lock.reclaimed",
    "provider.resent",
    "user.shell",
}


def _fixture_entries(tmp_path: Path) -> list[tuple[str, JSONObject, str]]:
    copy = tmp_path / "ledger.db"
    copy.write_bytes(FIXTURE.read_bytes())
    with Ledger.open(copy) as ledger:
        return [
            (e.kind, e.payload, e.content_hash)
            for s in ledger.sessions()
            for e in ledger.entries(s.id, own=True, rewound=True)
        ]


def test_every_payload_of_the_fixture_is_its_records_round_trip(tmp_path: Path) -> None:
    entries = _fixture_entries(tmp_path)
    kinds = {kind for kind, _, _ in entries}
    assert kinds | NOT_IN_FIXTURE == set(RECORDS)
    for kind, payload, digest in entries:
        again = RECORDS[kind].from_payload(payload).to_payload()
        assert again == payload, kind
        assert content_hash(kind, encode_payload(again)[0]) == digest, kind


def test_kinds_the_fixture_lacks_round_trip_too() -> None:
    window = RecordedWindow(8192, "config")
    made: list[Record] = [
        CompactRequested("user"),
        SessionConfigured("fake", "openai-chat", "m", None, window),
        SessionPlugins(
            ({"name": "p", "tools": ["T"], "recovery": [], "checks": [], "schema_bytes": 10},), ()
        ),
        PressureDeferred("threshold", "turn_boundary", 10, 8, 9, 2, 1, ({"action": "defer"},)),
        ProviderResent("evt_" + "0" * 32, "probe", "sha256:" + "ab" * 32, 120),
        UserShell("make test", 2, False, 1024),
        UserShell("sleep 900", None, True, 0),
        LockReclaimed(
            1,
            "h",
            2,
            "b:3",
            {"pid": 0, "host": "h", "process_started_at": 1, "process_start_id": "b:1"},
        ),
    ]
    for record in made:
        payload = encode_payload(record.to_payload())[1]
        assert type(record).from_payload(payload) == record


def _matches(value: object, annotation: object) -> bool:
    """Whether `value` has the (resolved) type a record field declares."""
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        return any(_matches(value, arm) for arm in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if origin is tuple:
        (item, _) = typing.get_args(annotation)
        return isinstance(value, tuple) and all(_matches(v, item) for v in value)
    if origin is dict or annotation is dict:
        return isinstance(value, dict)
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, float | int) and not isinstance(value, bool)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True  # JSONValue: any JSON


def _check_typed(record: Record) -> None:
    hints = typing.get_type_hints(
        type(record),
        globalns={**vars(typing), **vars(nested), "JSONObject": dict, "JSONValue": object},
    )
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        assert _matches(value, hints[field.name]), (type(record).KIND, field.name, value)


JUNK: list[JSONValue] = [None, True, 0, -3, 1.5, "", "x", [], [1, "a", {}], {}, {"a": None}]


def test_a_damaged_field_reads_as_its_default_and_never_raises(tmp_path: Path) -> None:
    seen: dict[str, JSONObject] = {}
    for kind, payload, _ in _fixture_entries(tmp_path):
        seen.setdefault(kind, payload)
    for kind, cls in RECORDS.items():
        _check_typed(cls.from_payload({}))
        for key in seen.get(kind, {}):
            for junk in JUNK:
                _check_typed(cls.from_payload({**seen[kind], key: junk}))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(sorted(RECORDS)),
    payload=st.dictionaries(
        st.sampled_from(
            [
                "call_id",
                "name",
                "status",
                "message",
                "usage",
                "window",
                "options",
                "criteria",
                "media",
                "by",
                "number",
                "ratio",
                "files",
                "origin",
                "tool",
            ]
        ),
        json_values,
        max_size=6,
    ),
)
def test_any_json_object_reads_as_a_typed_record(kind: str, payload: JSONObject) -> None:
    _check_typed(RECORDS[kind].from_payload(payload))


def test_the_docs_table_is_the_records_table() -> None:
    doc = (ROOT / "docs" / "ledger.md").read_text(encoding="utf-8")
    assert with_table(doc) == doc, "regenerate: python -m comal.ledger.records --write-doc"


def test_a_record_is_read_once_per_payload_object_and_per_class() -> None:
    def entry(payload: JSONObject) -> Entry:
        return Entry(1, "evt_memo", "s", "tool.result", payload, "sha256:x", 0)

    first = entry({"call_id": "c1", "status": "ok"})
    read = ToolResult.from_entry(first)
    assert ToolResult.from_entry(first) is read
    # The same id with another payload object (another ledger, a salvaged copy): its own record.
    other = entry({"call_id": "c2", "status": "error"})
    assert ToolResult.from_entry(other).call_id == "c2"
    assert ToolResult.from_entry(first).call_id == "c1"
    # Another class reading the same entry gets a record of its own class.
    assert ToolStartedRecord.from_entry(first).call_id == "c1"
    assert isinstance(ToolStartedRecord.from_entry(first), ToolStartedRecord)
