"""The connection the ledger's row modules query, as a protocol both engines' connections meet.

The row modules write portable SQL with `?` placeholders and open transactions explicitly; an
`sqlite3.Connection` is such a connection as it is, and PostgreSQL's is adapted to it
(`ledger/pg.py`, `PgConn`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class Rows(Protocol):
    """A query's result, as both engines' cursors give it."""

    @property
    def rowcount(self) -> int:
        """Rows an UPDATE or DELETE changed."""

    def fetchone(self) -> Any:
        """The next row, or None."""

    def fetchall(self) -> list[Any]:
        """Every remaining row."""

    def __iter__(self) -> Iterator[Any]:
        """The remaining rows, one at a time."""


class Conn(Protocol):
    """The connection the row modules query: `?` placeholders, explicit transactions."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Rows:
        """Run one statement."""

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open."""

    def close(self) -> None:
        """Close the connection."""
