"""Typed ledger records: one `@value` class (`comal.values`) per entry kind.

`Record` is the closed union of those classes and `Kind` the enum of their kinds. Every
writer appends a record (`Ledger.append_record`), and every reader outside `comal.ledger`
reads a payload through a record: `record_of(entry)` for any entry (a reader that branches on
the kind matches the record, or `kind_of(entry)`, exhaustively: `assert_never` makes a new kind
a type error until every such reader handles it), or `SomeRecord.from_entry(entry)` for an
entry already selected by kind. An entry of a kind this version does not know (a ledger a
newer Comal wrote) reads as None and is skipped, never refused (see `base.py` for the rules).
The entry-kind table of docs/ledger.md is rendered from these classes:

    python -m comal.ledger.records --write-doc
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from comal.ledger.entry import Entry
from comal.ledger.records.base import RecordBase
from comal.ledger.records.context import (
    BoardUpdated,
    CheckpointRecord,
    CompactCancelled,
    CompactRequested,
    ContextCalibrated,
    PressureDeferred,
    ProjectionRecord,
)
from comal.ledger.records.conversation import (
    AssistantMessage,
    ProviderErrorRecord,
    ProviderRequest,
    ProviderResent,
    ResponseDiscardedRecord,
    SummaryMessage,
    ToolResult,
    ToolStartedRecord,
    UserMessage,
    call_id_of,
    ran_call_of,
)
from comal.ledger.records.kinds import Kind
from comal.ledger.records.nested import (
    ChildOrigin,
    ImportOrigin,
    RecordedMedia,
    RecordedPermission,
    RecordedPreparation,
    RecordedWindow,
)
from comal.ledger.records.process import (
    ChildReceiptRecord,
    HookRun,
    LockAcquired,
    LockReclaimed,
    UserShell,
    WarningRecord,
)
from comal.ledger.records.session import (
    SessionConfigured,
    SessionFinished,
    SessionForked,
    SessionMoved,
    SessionPlugins,
    SessionResumed,
    SessionRewound,
    SessionStarted,
    SessionTools,
)

__all__ = [
    "RECORDS",
    "AssistantMessage",
    "BoardUpdated",
    "CheckpointRecord",
    "ChildOrigin",
    "ChildReceiptRecord",
    "CompactCancelled",
    "CompactRequested",
    "ContextCalibrated",
    "HookRun",
    "ImportOrigin",
    "Kind",
    "LockAcquired",
    "LockReclaimed",
    "PressureDeferred",
    "ProjectionRecord",
    "ProviderErrorRecord",
    "ProviderRequest",
    "ProviderResent",
    "Record",
    "RecordBase",
    "RecordedMedia",
    "RecordedPermission",
    "RecordedPreparation",
    "RecordedWindow",
    "ResponseDiscardedRecord",
    "SessionConfigured",
    "SessionFinished",
    "SessionForked",
    "SessionMoved",
    "SessionPlugins",
    "SessionResumed",
    "SessionRewound",
    "SessionStarted",
    "SessionTools",
    "SummaryMessage",
    "ToolResult",
    "ToolStartedRecord",
    "UserMessage",
    "UserShell",
    "WarningRecord",
    "call_id_of",
    "kind_of",
    "kind_table",
    "ran_call_of",
    "record_of",
]

Record = (
    SessionStarted
    | SessionTools
    | SessionPlugins
    | UserMessage
    | AssistantMessage
    | SummaryMessage
    | ProviderRequest
    | ProviderResent
    | ProviderErrorRecord
    | ResponseDiscardedRecord
    | ToolStartedRecord
    | ToolResult
    | ProjectionRecord
    | CheckpointRecord
    | PressureDeferred
    | ContextCalibrated
    | BoardUpdated
    | CompactRequested
    | CompactCancelled
    | LockAcquired
    | LockReclaimed
    | SessionConfigured
    | SessionForked
    | SessionRewound
    | HookRun
    | UserShell
    | SessionFinished
    | SessionResumed
    | SessionMoved
    | WarningRecord
    | ChildReceiptRecord
)
"""Any record: the closed union of the record classes (one per `Kind`), for `match`."""

_ORDER: tuple[type[Record], ...] = (
    SessionStarted,
    SessionTools,
    SessionPlugins,
    UserMessage,
    AssistantMessage,
    SummaryMessage,
    ProviderRequest,
    ProviderResent,
    ProviderErrorRecord,
    ResponseDiscardedRecord,
    ToolStartedRecord,
    ToolResult,
    ProjectionRecord,
    CheckpointRecord,
    PressureDeferred,
    ContextCalibrated,
    BoardUpdated,
    CompactRequested,
    CompactCancelled,
    LockAcquired,
    LockReclaimed,
    SessionConfigured,
    SessionForked,
    SessionRewound,
    HookRun,
    UserShell,
    SessionFinished,
    SessionResumed,
    SessionMoved,
    WarningRecord,
    ChildReceiptRecord,
)

RECORDS: dict[str, type[Record]] = {cls.KIND: cls for cls in _ORDER}
"""Every entry kind Comal writes, with its record class (in the docs table's order)."""

_KINDS: dict[str, Kind] = {kind.value: kind for kind in Kind}


def record_of(entry: Entry) -> Record | None:
    """The record of any entry, or None for a kind this version does not know (a ledger a
    newer Comal wrote keeps reading: its unknown entries are skipped)."""
    cls = RECORDS.get(entry.kind)
    return None if cls is None else cls.from_entry(entry)


def kind_of(entry: Entry) -> Kind | None:
    """The entry's kind as a `Kind`, or None for a kind this version does not know."""
    return _KINDS.get(entry.kind)


DOC_BEGIN = "<!-- entry kinds: begin (python -m comal.ledger.records --write-doc) -->"
DOC_END = "<!-- entry kinds: end -->"
DOC_PATH = Path("docs") / "ledger.md"


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


_JSON_TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "JSONObject": "object",
    "RecordedWindow": "object",
    "RecordedPermission": "object",
    "RecordedPreparation": "object",
    "RecordedMedia": "object",
    "ImportOrigin | ChildOrigin": "object",
    "JSONValue": "any",
}


def _json_type(annotation: str) -> str:
    """A field's annotation as JSON: `tuple[str, ...] | None` → `[string]?` (optional or null)."""
    optional = annotation.endswith(" | None")
    name = annotation.removesuffix(" | None")
    if name.startswith("tuple[") and name.endswith(", ...]"):
        shown = "[" + _JSON_TYPES.get(name[6:-6], name[6:-6]) + "]"
    else:
        shown = _JSON_TYPES.get(name, name)
    return shown + ("?" if optional else "")


def _fields(cls: type[RecordBase]) -> str:
    shown = []
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        key = field.name.rstrip("_")
        shown.append(f"`{key}` {_json_type(str(field.type))}")
    return ", ".join(shown)


def kind_table(records: Sequence[type[RecordBase]] = _ORDER) -> str:
    """The markdown table of entry kinds: kind, fields with types, what it records, writer."""
    lines = [
        "| kind | fields (`?`: optional or null) | what it records | written by |",
        "|---|---|---|---|",
    ]
    for cls in records:
        what = _one_line(cls.__doc__ or "")
        lines.append(f"| `{cls.KIND}` | {_fields(cls)} | {what} | {cls.WRITTEN_BY} |")
    return "\n".join(lines) + "\n"


def with_table(doc: str) -> str:
    """`doc` with the text between the entry-kind markers replaced by `kind_table()`.

    Raises:
        ValueError: the markers are missing.
    """
    head, begin, rest = doc.partition(DOC_BEGIN)
    _, end, tail = rest.partition(DOC_END)
    if not begin or not end:
        raise ValueError(f"{DOC_PATH} lacks the entry-kind markers {DOC_BEGIN!r} … {DOC_END!r}")
    return head + begin + "\n" + kind_table() + end + tail


def main(argv: Sequence[str]) -> int:
    """`--write-doc`: rewrite the table in docs/ledger.md (run from the checkout's root);
    otherwise print the table."""
    if "--write-doc" not in argv:
        sys.stdout.write(kind_table())
        return 0
    doc = DOC_PATH.read_text(encoding="utf-8")
    DOC_PATH.write_text(with_table(doc), encoding="utf-8")
    return 0
