"""The typed nested payloads (window, origin, permission, preparation, media) give back the
stored JSON byte for byte, alone and inside their records, and read damage as defaults."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from comal.ledger.canonical import encode_payload
from comal.ledger.records import (
    ChildOrigin,
    ImportOrigin,
    RecordedMedia,
    RecordedPermission,
    RecordedPreparation,
    RecordedWindow,
    SessionConfigured,
    SessionResumed,
    SessionStarted,
    ToolResult,
    ToolStartedRecord,
)
from comal.ledger.records.nested import origin_from_json
from comal.messages import JSONObject, JSONValue, canonical_json
from tests.unit.ledger.json_strategies import json_values, texts

ints = st.integers(min_value=-(2**63), max_value=2**63)
objects = st.dictionaries(texts, json_values, max_size=3)
maybe_texts = st.none() | texts
maybe_ints = st.none() | ints


def _shape(
    required: dict[str, st.SearchStrategy[JSONValue]],
    optional: dict[str, st.SearchStrategy[JSONValue]] | None = None,
) -> st.SearchStrategy[JSONObject]:
    """Objects of one shape, as Comal writes it (an optional key is absent, never null)."""
    return st.fixed_dictionaries(required, optional=optional or {})


windows = _shape({"tokens": maybe_ints, "source": texts})
permissions = _shape({"decision": texts, "mode": texts, "reason": texts})
preparations = _shape(
    {"path": texts, "abs_path": texts, "digest_before": maybe_texts, "digest_intended": texts},
    {"intent": objects},
)
media = _shape(
    {},
    {
        "media_type": texts,
        "data_b64": texts,
        "blob": texts,
        "size_bytes": ints,
        "digest": texts,
    },
)
import_origins = _shape(
    {
        "file": texts,
        "label": texts,
        "id": maybe_texts,
        "sha256": texts,
        "index": ints,
        "parent_call": maybe_texts,
        "compaction": st.booleans(),
    }
)
child_origins = _shape({"parent_session": texts, "parent_call": texts, "kind": texts, "key": texts})


def _same_bytes(before: JSONObject, after: JSONObject) -> None:
    assert canonical_json(after) == canonical_json(before)


@settings(max_examples=150, deadline=None)
@given(
    window=windows,
    permission=permissions,
    preparation=preparations,
    item=media,
    origin=import_origins | child_origins,
)
def test_each_nested_object_gives_back_its_json_byte_for_byte(
    window: JSONObject,
    permission: JSONObject,
    preparation: JSONObject,
    item: JSONObject,
    origin: JSONObject,
) -> None:
    _same_bytes(window, RecordedWindow.from_json(window).to_json())
    _same_bytes(permission, RecordedPermission.from_json(permission).to_json())
    _same_bytes(preparation, RecordedPreparation.from_json(preparation).to_json())
    _same_bytes(item, RecordedMedia.from_json(item).to_json())
    _same_bytes(origin, origin_from_json(origin).to_json())


@settings(max_examples=100, deadline=None)
@given(
    window=windows,
    origin=st.none() | import_origins | child_origins,
    permission=permissions,
    preparation=st.none() | preparations,
    items=st.none() | st.lists(media, max_size=3),
)
def test_records_holding_them_give_back_their_payload_byte_for_byte(
    window: JSONObject,
    origin: JSONObject | None,
    permission: JSONObject,
    preparation: JSONObject | None,
    items: list[JSONValue] | None,
) -> None:
    started: JSONObject = {
        "cwd": "/w",
        "provider": "p",
        "wire": "openai-chat",
        "model": "m",
        "window": window,
        "source": "comal",
    }
    if origin is not None:
        started["origin"] = origin
    call: JSONObject = {"call_id": "c1", "name": "Write", "arguments": {}, "permission": permission}
    if preparation is not None:
        call["preparation"] = preparation
    result: JSONObject = {
        "call_id": "c1",
        "name": "Read",
        "status": "ok",
        "is_error": False,
        "exit_code": None,
        "size_bytes": 3,
        "digest": "sha256:0",
    }
    if items is not None:
        result["media"] = items
    resumed: JSONObject = {"provider": "p", "wire": "w", "model": "m", "window": window}
    configured: JSONObject = {**resumed, "effort": None}
    for cls, payload in (
        (SessionStarted, started),
        (ToolStartedRecord, call),
        (ToolResult, result),
        (SessionResumed, resumed),
        (SessionConfigured, configured),
    ):
        stored = encode_payload(payload)[0]
        assert encode_payload(cls.from_payload(payload).to_payload())[0] == stored, cls


def test_a_damaged_nested_object_reads_as_its_defaults() -> None:
    assert RecordedWindow.from_json({"tokens": "many", "source": 3}) == RecordedWindow(None, None)
    assert RecordedPermission.from_json({"decision": True}) == RecordedPermission("", "", "")
    assert RecordedPreparation.from_json({"path": "a.txt", "intent": []}) == (
        RecordedPreparation("a.txt", None, None, None, None)
    )
    assert RecordedMedia.from_json({"size_bytes": True}) == RecordedMedia(None)
    assert origin_from_json({"parent_session": "s1"}) == ChildOrigin("s1", "", "", "")
    assert origin_from_json({"index": "2"}) == ImportOrigin("", "", None, "", None, None, False)
    started = SessionStarted.from_payload({"window": [], "origin": "x"})
    assert (started.window, started.origin) == (RecordedWindow(None, None), None)
