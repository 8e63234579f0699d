"""What stands behind a `Ledger`: the connection the row modules query, and the engine's own parts.

The row modules (`session_rows`, `entry_rows`, `locks`, `pages`, `history`) write portable
SQL with `?` placeholders against `Conn`: an `sqlite3.Connection` as it is, or PostgreSQL's
connection seen through the same two calls (`ledger/pg.py`). What differs between the engines
is behind `Engine`: how a blob's bytes are stored and read, how a reader learns that nothing
changed, how the ledger is verified. `SqliteEngine` is the embedded default; the SQLite path
runs exactly the calls it ran before the interface existed.

A target names a ledger: a path (SQLite), `sqlite:PATH`, or a `postgresql://` (or
`postgres://`) URL.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import astuple
from pathlib import Path
from typing import Protocol

from comal.errors import LedgerError
from comal.ids import now_ms
from comal.ledger.blobs import blob_ranges, insert_blob, read_blob
from comal.ledger.conn import Conn
from comal.ledger.locks import ProcessIdentity
from comal.ledger.pages import ReadRange
from comal.ledger.verify import EntryRow, VerifyReport, verify_ledger
from comal.ledger.writer_turn import WriterTurn

COPIED_ENTRY_SQL = (
    "INSERT INTO entries (seq, id, session_id, kind, payload, content_hash, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
"""How an entry copied from another ledger is inserted (PostgreSQL adds OVERRIDING)."""

POLL_S = 0.5
"""How often a watcher of an SQLite ledger looks again (`wait_for_change`)."""

_RANGES_MMAP_BYTES = 1 << 30
"""How much of the file the SQLite range reader maps (past it, SQLite reads as usual)."""

PG_SCHEMES = ("postgresql://", "postgres://")


class Engine(Protocol):
    """An engine's own parts of a ledger (see module docstring)."""

    name: str
    """`sqlite` or `postgresql`."""
    location: str
    """The ledger as messages name it (a path, or a URL without its password)."""
    errors: tuple[type[BaseException], ...]
    """What the engine's driver raises (wrapped in `LedgerError` by the `Ledger`)."""

    def begin(self, conn: Conn) -> None:
        """Open a write transaction."""

    def end(self, conn: Conn) -> None:
        """After the write transaction committed or rolled back (always called once `begin`
        returned): let the next writer in."""

    def before_append(self, conn: Conn, session_id: str) -> None:
        """Inside the append's transaction, before its seq is drawn: make appends to one
        session commit in seq order."""

    def append_entry(
        self, conn: Conn, row: EntryRow, holder: ProcessIdentity | None, blob: str | None
    ) -> tuple[int, int] | None:
        """Append `row` (its seq ignored) in one round trip to the server, in a transaction of
        its own, when the session exists, `holder` (if given) holds its lease and the body
        `blob` (if named) is stored: the stored (seq, created_at). None when it appended
        nothing: then the general path runs (and says why when it cannot append either)."""

    def insert_blob(self, conn: Conn, data: bytes, digest: str | None = None) -> str:
        """Store `data` unless present, in the caller's transaction; return its digest."""

    def read_blob(self, conn: Conn, digest: str) -> bytes | None:
        """The blob's exact bytes, or None."""

    def blob_ranges(self, conn: Conn, digest: str) -> AbstractContextManager[ReadRange | None]:
        """A reader of byte ranges of one blob (None when there is no such blob)."""

    def data_version(self, conn: Conn) -> object:
        """Equal between two calls only when nothing was committed in between."""

    def clock_ms(self, conn: Conn) -> int:
        """Now on the ledger's clock, ms UTC (what leases expire by)."""

    def verify(self, conn: Conn, session_id: str | None) -> VerifyReport:
        """Re-hash the entries (of one session, or all) and their blobs."""

    def insert_copied_entry(self, conn: Conn, row: EntryRow) -> None:
        """Insert an entry row copied from another ledger, keeping its seq."""

    def wait_for_change(self, timeout_s: float) -> None:
        """Return when another process may have appended, or after `timeout_s`."""

    def after_copy(self, conn: Conn) -> None:
        """After copied rows: new appends must draw seqs above every copied one."""

    def close(self) -> None:
        """Close what the engine opened besides the main connection."""


@contextmanager
def write_transaction(engine: Engine, conn: Conn) -> Iterator[Conn]:
    """One write transaction on `conn`: committed when the block ends, rolled back on error;
    the driver's errors become `LedgerError`. The engine's `end` follows whatever happened."""
    try:
        engine.begin(conn)
    except engine.errors as exc:
        raise LedgerError(f"cannot write ledger {engine.location}: {exc}") from exc
    try:
        try:
            yield conn
        except BaseException as exc:
            # SQLite already rolled back on SQLITE_FULL and some I/O errors; a second
            # ROLLBACK would replace the real cause with "no transaction is active".
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, engine.errors):
                raise LedgerError(f"cannot write ledger {engine.location}: {exc}") from exc
            raise
        try:
            conn.execute("COMMIT")
        except engine.errors as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise LedgerError(f"cannot commit to ledger {engine.location}: {exc}") from exc
    finally:
        engine.end(conn)


def is_pg_url(target: str | Path) -> bool:
    """Whether `target` names a PostgreSQL ledger."""
    return isinstance(target, str) and target.startswith(PG_SCHEMES)


def sqlite_path(target: str | Path) -> Path:
    """The file of an SQLite target (`sqlite:PATH` or a plain path)."""
    text = str(target)
    return Path(text[len("sqlite:") :] if text.startswith("sqlite:") else text)


def redact(url: str) -> str:
    """`url` without its password, for messages."""
    url = re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)
    return re.sub(r"(password=)[^&\s]*", r"\1***", url)


class SqliteEngine:
    """The embedded engine: one file, blobs read through a memory-mapped second connection."""

    name = "sqlite"
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        self._ranges: sqlite3.Connection | None = None
        self._turn = WriterTurn(path)

    def begin(self, conn: Conn) -> None:
        self._turn.take()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._turn.give()
            raise

    def end(self, conn: Conn) -> None:  # noqa: ARG002 (the turn is the engine's, not the conn's)
        self._turn.give()

    def before_append(self, conn: Conn, session_id: str) -> None:
        pass  # BEGIN IMMEDIATE already serialises every writer

    def append_entry(
        self,
        conn: Conn,  # noqa: ARG002
        row: EntryRow,  # noqa: ARG002
        holder: ProcessIdentity | None,  # noqa: ARG002
        blob: str | None,  # noqa: ARG002
    ) -> tuple[int, int] | None:
        return None  # in process: the general path has no round trips to save

    def insert_blob(self, conn: Conn, data: bytes, digest: str | None = None) -> str:
        assert isinstance(conn, sqlite3.Connection)
        return insert_blob(conn, data, digest)

    def read_blob(self, conn: Conn, digest: str) -> bytes | None:
        assert isinstance(conn, sqlite3.Connection)
        return read_blob(conn, digest)

    @contextmanager
    def blob_ranges(
        self,
        conn: Conn,  # noqa: ARG002 (the file is read through its own mapped connection)
        digest: str,
    ) -> Iterator[ReadRange | None]:
        """Ranges are read through a second, query-only connection that maps the file into
        memory: SQLite reaches a byte deep in a large blob only by walking its chain of pages
        from the start, which a mapping makes a walk over memory instead of one read call per
        page. Successive reads in one block continue along the same open blob."""
        with blob_ranges(self._ranges_conn(), digest) as read:
            yield read

    def _ranges_conn(self) -> sqlite3.Connection:
        if self._ranges is None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA query_only = ON")
                conn.execute(f"PRAGMA mmap_size = {_RANGES_MMAP_BYTES}")
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot read ledger {self.path}: {exc}") from exc
            self._ranges = conn
        return self._ranges

    def data_version(self, conn: Conn) -> object:
        """Changes by other connections, and by this one: equal ⇒ no new committed entry."""
        assert isinstance(conn, sqlite3.Connection)
        (data_version,) = conn.execute("PRAGMA data_version").fetchone()
        return int(data_version), conn.total_changes

    def clock_ms(self, conn: Conn) -> int:  # noqa: ARG002 (every writer shares this clock)
        return now_ms()

    def verify(self, conn: Conn, session_id: str | None) -> VerifyReport:
        assert isinstance(conn, sqlite3.Connection)
        return verify_ledger(conn, session_id)

    def insert_copied_entry(self, conn: Conn, row: EntryRow) -> None:
        conn.execute(COPIED_ENTRY_SQL, astuple(row))

    def after_copy(self, conn: Conn) -> None:
        pass  # an INTEGER PRIMARY KEY always continues above the largest one

    def wait_for_change(self, timeout_s: float) -> None:
        """A file has no notifications: poll (the caller re-reads; reading is cheap)."""
        time.sleep(min(timeout_s, POLL_S))

    def close(self) -> None:
        self._turn.close()
        if self._ranges is not None:
            self._ranges.close()
            self._ranges = None
