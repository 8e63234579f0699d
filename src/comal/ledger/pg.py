"""The ledger on PostgreSQL (psycopg 3): connecting and migrating, the row modules' connection,
blobs as bytea chunks, verification.

Invariants:
- One autocommit connection; every write is an explicit transaction (`BEGIN` … `COMMIT`), as
  on SQLite. Appends to one session take the session row's lock before drawing their seq, so
  a session's entries commit in seq order: a reader that has seen seq N of a session never
  sees a lower one of it appear later (what the entry cache relies on).
- Migrations run in one transaction under an advisory lock, so two processes opening a new
  ledger together migrate it once; the version is checked again under that lock.
- A blob is written once: the `blobs` row is inserted `ON CONFLICT DO NOTHING`, and only the
  transaction that inserted it writes its chunks (a concurrent one with the same bytes waits on
  the row, then finds it).
- The URL's password never appears in a message (`engine.redact`).
- An append without a body is one round trip (`append_entry`): its four statements (BEGIN, the
  session row locked, a conditional INSERT, COMMIT) go out in one pipeline. The INSERT runs
  after the lock, in a snapshot of its own, and inserts nothing unless the session exists, this
  process still holds the session's lease (when it took one) and a referenced body blob is
  stored; then the general path (`Ledger._append`, one statement per round trip) runs and says
  which. A connection lost in the pipeline is never re-run blind: the append is retried by its
  entry id, as a lost transaction is.

The schema (`pg_schema.py`) is the SQLite one table for table, so `session_rows`,
`entry_rows`, `locks`, `pages` and `history` run unchanged through `PgConn`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import astuple
from typing import Any

import psycopg

from comal.errors import LedgerError, LedgerUnavailableError, SchemaTooNewError
from comal.ids import now_ms
from comal.ledger.conn import Conn, Rows
from comal.ledger.engine import COPIED_ENTRY_SQL, redact
from comal.ledger.locks import ProcessIdentity
from comal.ledger.pages import (
    INDEX_MIN_BYTES,
    ReadRange,
    index_of_bytes,
    stored_page_index,
    write_page_index,
)
from comal.ledger.pg_schema import CHUNK_BYTES, GRANTS, NOTIFY_CHANNEL, PG_MIGRATIONS
from comal.ledger.verify import EntryRow, Scan, VerifyReport, entry_problems, report
from comal.ledger.verify import EntryRow as CopiedRow
from comal.messages import digest_bytes

_MIGRATE_LOCK = 0x636F6D616C
"""The advisory lock key migrations hold ("comal")."""
_KNOWN = {name for name, _ in PG_MIGRATIONS}
_SPECIAL = {"BEGIN IMMEDIATE": "BEGIN"}


def _translate(sql: str) -> str:
    """The statement with psycopg's placeholders (`?` → `%s`, a literal `%` doubled)."""
    return _SPECIAL.get(sql) or sql.replace("%", "%%").replace("?", "%s")


_DEFAULT_WAIT_S = 300.0


def wait_s() -> float:
    """How long a lost connection is waited for (`COMAL_LEDGER_WAIT_S`, default 300 s)."""
    raw = os.environ.get("COMAL_LEDGER_WAIT_S", "")
    try:
        return max(0.0, float(raw)) if raw else _DEFAULT_WAIT_S
    except ValueError:
        return _DEFAULT_WAIT_S


def stderr_notice(text: str) -> None:
    """The default notice of a wait on the database: one line on stderr."""
    print(f"comal: {text}", file=sys.stderr, flush=True)


class PgConn:
    """A psycopg connection seen through the calls the row modules make on SQLite's.

    A connection lost while idle (between transactions: the server restarted, a proxy dropped
    it) is reconnected and the statement run again — nothing of it had run. One lost inside a
    transaction raises `LedgerUnavailableError` once the server is back (the transaction is
    gone, committed or not: the `Ledger` retries an append keyed by its entry id and content
    hash, so it is committed once). While the server is away, `notify` says so.
    """

    def __init__(self, raw: psycopg.Connection[Any], url: str | None = None) -> None:
        self.raw = raw
        self.url = url
        self.notify: Callable[[str], None] = stderr_notice
        self._queries: dict[str, str] = {}
        self._closed = False

    def execute(self, sql: str, parameters: Any = None, /) -> Rows:
        """Run one statement with `?` placeholders."""
        query = self._queries.get(sql)
        if query is None:
            query = self._queries[sql] = _translate(sql)
        idle = self.in_transaction is False
        try:
            return self.raw.execute(query, parameters or None, binary=True)
        except psycopg.OperationalError as exc:
            if not idle:
                error = self.lost(exc)
                if error is None:
                    raise
                raise error from exc
            if self._closed or self.url is None or not self.raw.broken:
                raise
            self.reconnect(_reason(exc))
            return self.raw.execute(query, parameters or None, binary=True)

    @contextmanager
    def losing(self) -> Iterator[None]:
        """Statements run on `raw` inside a transaction: a lost connection raises
        `LedgerUnavailableError` once the server is back, as `execute` does."""
        try:
            yield
        except psycopg.OperationalError as exc:
            error = self.lost(exc)
            if error is None:
                raise
            raise error from exc

    def lost(self, exc: psycopg.OperationalError) -> LedgerUnavailableError | None:
        """After `exc` broke a transaction: the error to raise once the server is back (the
        connection is made again), or None when the connection is not lost (raise `exc`).
        A server shutting down says so before it closes the connection (SQLSTATE 57P…), and
        the driver may not have seen the close yet: that connection is lost too."""
        gone = self.raw.broken or (exc.sqlstate or "").startswith(("57P", "08"))
        if self._closed or self.url is None or not gone:
            return None
        self.reconnect(_reason(exc))
        return LedgerUnavailableError(
            f"the connection to ledger {redact(self.url)} was lost mid-transaction ({_reason(exc)})"
        )

    def reconnect(self, reason: str) -> None:
        """Connect again, waiting up to `wait_s()` for the server, saying so while it waits.

        Raises:
            LedgerUnavailableError: the server did not come back in time.
        """
        assert self.url is not None
        where = redact(self.url)
        patience = wait_s()
        deadline = time.monotonic() + patience
        self.notify(
            f"waiting for the ledger at {where} ({reason}); up to {patience:.0f} s"
            " (COMAL_LEDGER_WAIT_S)"
        )
        pause = 0.05
        while True:
            try:
                raw = psycopg.connect(
                    self.url, autocommit=True, connect_timeout=5, application_name="comal"
                )
                break
            except psycopg.OperationalError as exc:
                if time.monotonic() + pause > deadline:
                    raise LedgerUnavailableError(
                        f"the ledger at {where} did not come back within {patience:.0f} s"
                        f" ({_reason(exc)}); nothing committed is lost"
                    ) from exc
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
        old, self.raw = self.raw, raw
        old.close()
        self.notify(f"the ledger at {where} is back")

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (never on a lost connection: its transaction died)."""
        if self.raw.broken or self.raw.closed:
            return False
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def close(self) -> None:
        """Close the connection."""
        self._closed = True
        self.raw.close()


def connect(url: str) -> PgConn:
    """An autocommit connection to the checked, migrated ledger at `url`.

    Raises:
        SchemaTooNewError: the ledger records a migration this Comal does not know.
        LedgerError: the server cannot be reached, or the schema holds another program's tables.
    """
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10, application_name="comal")
    except psycopg.Error as exc:
        raise LedgerError(f"cannot connect to ledger {redact(url)}: {_reason(exc)}") from exc
    try:
        migrate(raw, redact(url))
    except psycopg.Error as exc:
        raw.close()
        raise LedgerError(f"cannot migrate ledger {redact(url)}: {_reason(exc)}") from exc
    except BaseException:
        raw.close()
        raise
    return PgConn(raw, url)


def open_existing(url: str) -> PgConn:
    """A connection to the ledger at `url` that writes nothing (no migration): for reading
    a ledger to copy or salvage from.

    Raises:
        SchemaTooNewError: the ledger records a migration this Comal does not know.
        LedgerError: the server cannot be reached, or the schema holds no Comal ledger.
    """
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10, application_name="comal")
    except psycopg.Error as exc:
        raise LedgerError(f"cannot connect to ledger {redact(url)}: {_reason(exc)}") from exc
    try:
        if not applied_migrations(raw, redact(url)):
            raise LedgerError(f"{redact(url)} holds no Comal ledger")
    except BaseException:
        raw.close()
        raise
    return PgConn(raw)


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _table_exists(raw: psycopg.Connection[Any], name: str) -> bool:
    row = raw.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    return bool(row and row[0])


def applied_migrations(raw: psycopg.Connection[Any], where: str) -> set[str]:
    """The migrations the ledger records, after checking this Comal may write it.

    Raises:
        SchemaTooNewError: a migration this Comal does not know is recorded.
        LedgerError: no `migrations` table, but the schema holds other tables.
    """
    # The schema's tables in one snapshot: another process may be committing the ledger's
    # creation between two statements (then the second would see tables the first did not).
    row = raw.execute(
        "SELECT coalesce(array_agg(tablename::text ORDER BY tablename), '{}') FROM pg_tables"
        " WHERE schemaname = current_schema()"
    ).fetchone()
    tables: list[str] = list(row[0]) if row is not None else []
    if "migrations" not in tables:
        if tables:
            raise LedgerError(
                f"{where} holds tables that are not a Comal ledger ({', '.join(tables)}); it was"
                " left untouched (give the URL another database or search_path)"
            )
        return set()
    applied = {str(r[0]) for r in raw.execute("SELECT name FROM migrations")}
    unknown = sorted(applied - _KNOWN)
    if unknown:
        raise SchemaTooNewError(
            f"{where} was written by a newer Comal (unknown migrations {', '.join(unknown)};"
            f" this Comal knows schema {len(PG_MIGRATIONS)}); upgrade Comal to use it"
            " — it was left untouched"
        )
    return applied


def migrate(raw: psycopg.Connection[Any], where: str) -> None:
    """Apply every missing migration, in one transaction under the migration lock."""
    if applied_migrations(raw, where) >= _KNOWN:
        return  # up to date: nothing written, so a role without DDL rights opens it
    with raw.transaction():
        raw.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
        applied = applied_migrations(raw, where)
        if not _table_exists(raw, "migrations"):
            raw.execute(
                "CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)"
            )
        for name, text in PG_MIGRATIONS:
            if name not in applied:
                raw.execute(text.encode())
                raw.execute(
                    "INSERT INTO migrations (name, applied_at) VALUES (%s, %s)", (name, now_ms())
                )
        raw.execute(GRANTS.encode())


# --- appends -------------------------------------------------------------------------------

_LOCK_SESSION = "SELECT 1 FROM sessions WHERE id = %s FOR UPDATE"
_INSERT_IF = (
    "INSERT INTO entries (id, session_id, kind, payload, content_hash, created_at)"
    " SELECT %s, s.id, %s, %s, %s, greatest(%s, s.last_activity_at) FROM sessions s"
    " WHERE s.id = %s"
)
_HOLDER = (
    " AND EXISTS (SELECT 1 FROM locks l WHERE l.session_id = s.id AND l.pid = %s"
    " AND l.host = %s AND l.process_start_id = %s)"
)
_BLOB = " AND EXISTS (SELECT 1 FROM blobs b WHERE b.hash = %s)"


def append_entry(
    conn: PgConn, row: EntryRow, holder: ProcessIdentity | None, blob: str | None
) -> tuple[int, int] | None:
    """Append `row` (its seq ignored) in one round trip; its (seq, created_at), or None when
    nothing was inserted (see module docstring). `created_at` is the later of the row's and the
    session's last entry's, so it never decreases along seq whatever the hosts' clocks say."""
    sql = _INSERT_IF
    params: list[object] = [
        row.id,
        row.kind,
        row.payload,
        row.content_hash,
        row.created_at,
        row.session_id,
    ]
    if holder is not None:
        sql += _HOLDER
        params += [holder.pid, holder.host, holder.start_id]
    if blob is not None:
        sql += _BLOB
        params.append(blob)
    raw = conn.raw
    try:
        with raw.pipeline():
            raw.execute("BEGIN")
            raw.execute(_LOCK_SESSION, (row.session_id,))
            inserted = raw.execute(sql + " RETURNING seq, created_at", params)
            raw.execute("COMMIT")
        found = inserted.fetchone()
    except psycopg.OperationalError as exc:
        error = conn.lost(exc)
        if error is None:
            if conn.url is None:
                raise
            # A pipeline cut short leaves the connection unusable ("busy"): start afresh.
            conn.reconnect(_reason(exc))
            raise LedgerUnavailableError(f"an append was cut short ({_reason(exc)})") from exc
        raise error from exc
    except psycopg.Error:
        _rollback(conn)
        raise
    return None if found is None else (int(found[0]), int(found[1]))


def _rollback(conn: PgConn) -> None:
    if conn.in_transaction:
        conn.raw.execute("ROLLBACK")


# --- blobs -----------------------------------------------------------------------------------


def insert_blob(conn: PgConn, data: bytes, digest: str | None = None) -> str:
    """Store `data` unless present (caller's transaction); return its digest."""
    digest = digest or digest_bytes(data)
    cursor = conn.raw.execute(
        "INSERT INTO blobs (hash, size_bytes, chunk_bytes) VALUES (%s, %s, %s)"
        " ON CONFLICT (hash) DO NOTHING",
        (digest, len(data), CHUNK_BYTES),
    )
    if cursor.rowcount == 0:
        return digest
    view = memoryview(data)
    with conn.raw.cursor() as many:
        many.executemany(
            "INSERT INTO blob_chunks (hash, n, data) VALUES (%s, %s, %s)",
            [
                (digest, n, view[start : start + CHUNK_BYTES])
                for n, start in enumerate(range(0, len(data), CHUNK_BYTES))
            ],
        )
    if len(data) >= INDEX_MIN_BYTES:
        write_page_index(conn, digest, index_of_bytes(data))
    return digest


def read_blob(conn: PgConn, digest: str) -> bytes | None:
    """The blob's exact bytes, or None."""
    if conn.execute("SELECT 1 FROM blobs WHERE hash = ?", (digest,)).fetchone() is None:
        return None
    rows = conn.raw.execute(
        "SELECT data FROM blob_chunks WHERE hash = %s ORDER BY n", (digest,)
    ).fetchall()
    return b"".join(bytes(row[0]) for row in rows)


@contextmanager
def blob_ranges(conn: PgConn, digest: str) -> Iterator[ReadRange | None]:
    """A reader of byte ranges of one blob: each read fetches only the slices of the chunks it
    spans (chunks are stored uncompressed, so the server reads only those pages)."""
    row = conn.raw.execute(
        "SELECT size_bytes, chunk_bytes FROM blobs WHERE hash = %s", (digest,)
    ).fetchone()
    if row is None:
        yield None
        return
    size, chunk = int(row[0]), int(row[1])

    def read(start: int, end: int) -> bytes:
        start, end = max(0, start), min(size, end)
        if end <= start:
            return b""
        first, last = start // chunk, (end - 1) // chunk
        if first == last:
            one = conn.raw.execute(
                "SELECT substring(data FROM %s FOR %s) FROM blob_chunks WHERE hash = %s AND n = %s",
                (start - first * chunk + 1, end - start, digest, first),
            ).fetchone()
            return b"" if one is None else bytes(one[0])
        rows = conn.raw.execute(
            "SELECT data FROM blob_chunks WHERE hash = %s AND n BETWEEN %s AND %s ORDER BY n",
            (digest, first, last),
        ).fetchall()
        data = b"".join(bytes(r[0]) for r in rows)
        offset = start - first * chunk
        return data[offset : offset + end - start]

    yield read


# --- verification ----------------------------------------------------------------------------


def scan(conn: PgConn, session_id: str | None) -> Scan:
    """Every entry (of one session, or all) and the blobs they reach, re-hashed."""
    found = Scan([], [], [], [])
    where, params = ("WHERE session_id = %s", (session_id,)) if session_id else ("", ())
    readable: list[tuple[EntryRow, str | None]] = []
    with conn.raw.cursor() as cursor:
        cursor.execute(
            "SELECT seq, id, session_id, kind, payload, content_hash, created_at FROM entries"
            f" {where} ORDER BY seq",
            params,
        )
        for raw in cursor:
            row = EntryRow(*raw)
            found.entries_seen += 1
            problems, blob = entry_problems(row)
            if problems:
                found.damaged.extend((row.id, p) for p in problems)
            else:
                readable.append((row, blob))
    if session_id is None:
        digests = {str(r[0]) for r in conn.raw.execute("SELECT hash FROM blobs")}
    else:
        digests = set()
    digests.update(blob for _, blob in readable if blob is not None)
    usable: set[str] = set()
    present: set[str] = set()
    for digest in sorted(digests):
        meta = conn.raw.execute(
            "SELECT size_bytes FROM blobs WHERE hash = %s", (digest,)
        ).fetchone()
        if meta is None:
            continue
        present.add(digest)
        found.blobs_seen += 1
        hasher, size = hashlib.sha256(), 0
        for (piece,) in conn.raw.execute(
            "SELECT data FROM blob_chunks WHERE hash = %s ORDER BY n", (digest,)
        ):
            hasher.update(piece)
            size += len(piece)
        actual = "sha256:" + hasher.hexdigest()
        if actual != digest:
            found.problems.append(f"blob {digest}: content hashes to {actual}")
            continue
        if size != meta[0]:
            found.problems.append(f"blob {digest}: size {size} bytes, recorded {meta[0]!r}")
        usable.add(digest)
        found.blob_digests.append(digest)
    if session_id is None:
        for digest, size in conn.raw.execute(
            "SELECT p.hash, b.size_bytes FROM blob_pages p JOIN blobs b ON b.hash = p.hash"
        ).fetchall():
            if stored_page_index(conn, digest, int(size)) is None:
                found.problems.append(
                    f"page index of blob {digest} does not check;"
                    " it is rebuilt from the blob when read"
                )
    for row, blob in readable:
        if blob is None or blob in usable:
            found.rows.append(row)
        else:
            state = "damaged" if blob in present else "missing"
            found.damaged.append(
                (row.id, f"entry {row.id} (seq {row.seq}): body blob {blob} is {state}")
            )
    return found


class PgEngine:
    """The PostgreSQL engine of a `Ledger` (see module docstring)."""

    name = "postgresql"
    errors: tuple[type[BaseException], ...] = (psycopg.Error,)

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = redact(url)
        self._version = 0
        self._listener: psycopg.Connection[Any] | None = None

    def begin(self, conn: Conn) -> None:
        conn.execute("BEGIN")

    def end(self, conn: Conn) -> None:
        pass  # the server queues writers itself, and wakes the next at once

    def before_append(self, conn: Conn, session_id: str) -> None:
        conn.execute("SELECT 1 FROM sessions WHERE id = ? FOR UPDATE", (session_id,))

    def append_entry(
        self, conn: Conn, row: EntryRow, holder: ProcessIdentity | None, blob: str | None
    ) -> tuple[int, int] | None:
        assert isinstance(conn, PgConn)
        try:
            return append_entry(conn, row, holder, blob)
        except LedgerError:
            raise
        except psycopg.Error as exc:
            raise LedgerError(f"cannot write ledger {self.location}: {_reason(exc)}") from exc

    def insert_blob(self, conn: Conn, data: bytes, digest: str | None = None) -> str:
        assert isinstance(conn, PgConn)
        with conn.losing():
            return insert_blob(conn, data, digest)

    def read_blob(self, conn: Conn, digest: str) -> bytes | None:
        assert isinstance(conn, PgConn)
        return read_blob(conn, digest)

    def blob_ranges(self, conn: Conn, digest: str) -> Any:
        assert isinstance(conn, PgConn)
        return blob_ranges(conn, digest)

    def data_version(self, conn: Conn) -> object:  # noqa: ARG002
        """Never equal: a reader always asks for the rows after the last seq it holds (one
        indexed query; the server has no cheap counter of other connections' commits)."""
        self._version += 1
        return self._version

    def clock_ms(self, conn: Conn) -> int:
        """The server's clock: hosts sharing the ledger need not agree on the time."""
        row = conn.execute("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
        return int(row.fetchone()[0])

    def verify(self, conn: Conn, session_id: str | None) -> VerifyReport:
        assert isinstance(conn, PgConn)
        return report(scan(conn, session_id))

    def wait_for_change(self, timeout_s: float) -> None:
        """Wait for an append's notification (LISTEN on a connection of its own)."""
        if self._listener is None or self._listener.closed or self._listener.broken:
            self._listener = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            self._listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        for _ in self._listener.notifies(timeout=timeout_s, stop_after=1):
            pass

    def insert_copied_entry(self, conn: Conn, row: CopiedRow) -> None:
        conn.execute(
            COPIED_ENTRY_SQL.replace(" VALUES", " OVERRIDING SYSTEM VALUE VALUES"), astuple(row)
        )

    def after_copy(self, conn: Conn) -> None:
        conn.execute(
            "SELECT setval(pg_get_serial_sequence('entries', 'seq'),"
            " (SELECT coalesce(max(seq), 0) + 1 FROM entries), false)"
        )

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
