"""What every record is: a frozen value of one entry kind, read tolerantly, written exactly.

`from_payload(p)` never raises (a damaged field reads as its default, `fields`);
`to_payload()` is the payload dict the writers of the day built, so ledger bytes stay the
same (`comal.ledger.canonical` turns it into the stored text). Optional keys are None in
the record and left out of the payload; a key that is recorded as null is said so in its
field's type (`int | None` beside a docstring saying "null").
"""

from __future__ import annotations

from typing import ClassVar, Self

from comal.ledger.entry import Entry
from comal.messages import JSONObject


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
        """The record an entry holds (its kind is not checked: callers select by kind)."""
        return cls.from_payload(entry.payload)
