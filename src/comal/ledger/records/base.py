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

_READ: dict[type, dict[str, tuple[JSONObject, Any]]] = {}
"""Records already read, by class, then by entry id, with the payload object they were read
from: a session's entries are read by the view, the pairing, the work state and the budget
alike, and one payload object always reads as the same record. (One table per class: the
entry id alone is the key, so a lookup builds no key of its own.)"""

_READ_MAX = 100_000
"""Records kept per class; a full table is emptied (a record is then simply read again)."""


class Record:
    """The base of every record class (a frozen, slotted dataclass)."""

    __slots__ = ()

    KIND: ClassVar[str]
    """The entry kind, e.g. `tool.result`."""
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
        read = _READ.get(cls)
        if read is None:
            read = _READ[cls] = {}
        payload = entry.payload
        hit = read.get(entry.id)
        if hit is not None and hit[0] is payload:
            return cast(Self, hit[1])
        record = cls.from_payload(payload)
        if len(read) >= _READ_MAX:
            read.clear()
        read[entry.id] = (payload, record)
        return record
