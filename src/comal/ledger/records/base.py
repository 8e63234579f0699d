"""What every record is: a frozen value of one entry kind, read tolerantly, written exactly.

`from_payload(p)` never raises (a damaged field reads as its default, `fields`);
`to_payload()` is the payload dict the writers of the day built, so ledger bytes stay the
same (`comal.ledger.canonical` turns it into the stored text). Optional keys are None in
the record and left out of the payload; a key that is recorded as null is said so in its
field's type (`int | None` beside a docstring saying "null").
"""

from __future__ import annotations

from typing import Any, ClassVar, Self, cast

from comal.ledger.entry import Entry
from comal.messages import JSONObject

_READ: dict[type, tuple[dict[str, Any], dict[str, JSONObject]]] = {}
"""Records already read, by class: each entry id's record, and beside it the payload object it
was read from. A session's entries are read by the view, the pairing, the work state and the
budget alike, and one payload object always reads as the same record. (A table per class, and
the record and its payload in two tables by id: a lookup builds no key, and no pair is kept
per record for the collector to walk.)"""

_READ_MAX = 100_000
"""Records kept per class; full tables are emptied (a record is then simply read again)."""


class RecordBase:
    """The base of every record class (a frozen, slotted dataclass)."""

    __slots__ = ()

    KIND: ClassVar[str]
    """The entry kind, a `Kind` member (e.g. `Kind.TOOL_RESULT`, stored as `tool.result`)."""
    WRITTEN_BY: ClassVar[str]
    """Who appends it (the docs table's last column)."""

    def to_payload(self) -> JSONObject:
        """The payload to append (exactly the dict the writers built)."""
        raise NotImplementedError

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        """The record a payload holds, tolerating missing and wrongly typed fields."""
        raise NotImplementedError

    @classmethod
    def from_entry(cls, entry: Entry) -> Self:
        """The record an entry holds (its kind is not checked: callers select by kind).

        Memoized per payload object (records are frozen; the payload is never modified)."""
        tables = _READ.get(cls)
        if tables is None:
            tables = _READ[cls] = ({}, {})
        records, payloads = tables
        payload = entry.payload
        # Read the record before its payload, write the payload before its record: a reader
        # racing a writer of the same id then never takes one payload's record for another's.
        record = records.get(entry.id)
        if record is not None and payloads.get(entry.id) is payload:
            return cast(Self, record)
        record = cls.from_payload(payload)
        if len(records) >= _READ_MAX:
            records.clear()
            payloads.clear()
        payloads[entry.id] = payload
        records[entry.id] = record
        return record
