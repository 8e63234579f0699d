"""Salvage: copy every intact entry of a (possibly damaged) ledger file into a new ledger.

The source is opened read-only and never written. Intact means what `verify` accepts: the row
reads, its payload hashes to its `content_hash`, and a body blob it names reads and hashes to
its key. Each intact entry keeps its `evt_` id, kind, payload (hence its content hash) and
creation time, in seq order; its session is recreated with the recorded id, cwd, model, title,
source, parent and status as far as they read (a session row that does not read is recreated
with empty fields and source `salvage`). Lock rows are not copied: no process holds the copy.

SQL alone loses intact rows when the damage is in the schema (page 1) or in an interior page
of a b-tree: SQLite then refuses the file, or never reaches the leaves below. So the file's
pages are also read directly (`page_scan.py`): every entry and blob found there that hashes
to its recorded digest is kept too, and a session row found there stands in for one SQL
cannot read. The union is copied, in seq order.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from comal.errors import LedgerError
from comal.ledger.canonical import decode_payload
from comal.ledger.conn import Conn
from comal.ledger.engine import is_pg_url, sqlite_path
from comal.ledger.entry_rows import insert_entry
from comal.ledger.page_scan import PageScan, PageSession, scan_pages
from comal.ledger.schema import check_version
from comal.ledger.session_rows import STATUSES, insert_session, resolve_prefix
from comal.ledger.verify import READ_ERRORS, Scan, VerifyReport, scan, verify_ledger


@dataclass(frozen=True, slots=True)
class SalvageReport:
    """What `salvage` copied and what it left behind."""

    sessions: int
    entries: int
    blobs: int
    damaged: tuple[str, ...]
    """Entries not copied (by `evt_` id, or `seq N` when unreadable)."""


@dataclass(frozen=True, slots=True)
class _SessionRow:
    id: str
    parent_id: str | None
    cwd: str
    model: str
    title: str
    source: str
    status: str
    created_at: int


def _read_only_directory(path: Path) -> bool:
    return not os.access(path.parent, os.W_OK)


def _on_read_only_directory(conn: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """A ledger in a directory nothing may write to (a read-only file system) cannot be opened
    the usual way: its WAL index file cannot be made. When no write-ahead log holds entries
    beyond the main file, the main file alone is the whole ledger and is read as immutable.

    Raises:
        LedgerError: the write-ahead log holds entries that only a writable directory lets
            SQLite read.
    """
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise LedgerError(
                f"{path.parent} is read-only and the ledger's write-ahead log ({wal.name}) holds"
                " entries SQLite can only read from a writable directory: copy the ledger and"
                " its -wal file elsewhere and verify the copy"
            ) from None
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    return conn


def open_read_only(path: Path, *, check: bool = True) -> sqlite3.Connection:
    """A read-only connection to a ledger file that may be damaged (no migration, no write).

    Raises:
        SchemaTooNewError: the ledger records a newer schema.
        LedgerError: the file does not exist, SQLite cannot open it at all, or it is another
            program's database.
    """
    if not path.is_file():
        raise LedgerError(f"no ledger file at {path}")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        if _read_only_directory(path):
            conn = _on_read_only_directory(conn, path)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {path}: {exc}") from exc
    if not check:
        return conn
    try:
        # A newer schema or another program's database is refused, as `Ledger.open` does;
        # a version that cannot be read is damage, which the scan reports.
        check_version(conn, path, probe=True)
    except READ_ERRORS:
        pass
    except BaseException:
        conn.close()
        raise
    return conn


def verify_file(path: Path, session_id: str | None = None) -> VerifyReport:
    """Verify a ledger file without opening it for writing (works on a damaged file).

    Raises:
        LedgerError: the file does not exist or cannot be opened at all.
    """
    conn = open_read_only(path)
    try:
        return verify_ledger(conn, session_id)
    except READ_ERRORS as exc:
        return VerifyReport(False, 0, 0, (f"{path}: unreadable as a ledger ({exc})",))
    finally:
        conn.close()


def resolve_in_file(path: Path, prefix: str) -> str:
    """The session id `prefix` names in the ledger file, read-only (see `Ledger.resolve`).

    Raises:
        UnknownSessionError, AmbiguousSessionError: as `Ledger.resolve`.
        LedgerError: the file cannot be opened or its sessions read.
    """
    conn = open_read_only(path)
    try:
        return resolve_prefix(conn, prefix, path)
    except READ_ERRORS as exc:
        raise LedgerError(f"{path}: cannot read its sessions ({exc})") from exc
    finally:
        conn.close()


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


def _sessions(
    conn: Conn | None, wanted: set[str], pages: dict[str, PageSession]
) -> dict[str, _SessionRow]:
    """The session rows for `wanted` ids, each read on its own (from the pages when SQL
    cannot read it); ones read nowhere are made up."""
    found: dict[str, _SessionRow] = {}
    for sid in sorted(wanted):
        row: tuple[object, ...] | None = None
        try:
            if conn is not None:
                row = conn.execute(
                    "SELECT parent_id, cwd, model, title, source, status, created_at"
                    " FROM sessions WHERE id = ?",
                    (sid,),
                ).fetchone()
        except READ_ERRORS:
            row = None
        paged = pages.get(sid)
        if row is None and paged is not None:
            row = (
                paged.parent_id,
                paged.cwd,
                paged.model,
                paged.title,
                paged.source,
                paged.status,
                paged.created_at,
            )
        if row is None:
            found[sid] = _SessionRow(sid, None, "", "", "", "salvage", "interrupted", 0)
            continue
        parent = _text(row[0]) or None
        status = _text(row[5])
        created = row[6] if isinstance(row[6], int) else 0
        found[sid] = _SessionRow(
            sid,
            parent,
            _text(row[1]),
            _text(row[2]),
            _text(row[3]),
            _text(row[4]) or "salvage",
            status if status in STATUSES else "interrupted",
            created,
        )
    return found


def _read_blob(conn: sqlite3.Connection | None, digest: str, pages: PageScan) -> bytes:
    if digest in pages.blobs:
        return pages.blobs[digest]
    if conn is None:
        raise LedgerError(f"blob {digest} became unreadable while salvaging")
    row = conn.execute("SELECT data FROM blobs WHERE hash = ?", (digest,)).fetchone()
    data = row[0] if row is not None else None
    if not isinstance(data, bytes):
        raise LedgerError(f"blob {digest} became unreadable while salvaging")
    return data


BlobPut = Callable[[Conn, bytes, str], str]
"""Stores a blob in the target ledger (its engine's `insert_blob`)."""


def _merge(found: Scan, pages: PageScan) -> Scan:
    """SQL's intact rows and blobs, with every intact one only the pages hold added.

    A row only the pages hold (SQL could not read its seq) is kept when its body blob (if it
    names one) verifies in either read; a seq SQL read keeps SQL's row, and an entry SQL read
    and judged damaged stays left behind.
    """
    usable = set(found.blob_digests) | set(pages.blobs)
    flagged = {name for name, _ in found.damaged}
    by_seq = {row.seq: row for row in found.rows}
    for row in sorted(pages.entries.values(), key=lambda r: r.seq):
        # SQL's reading of a seq stands; a row it read and judged damaged stays left behind.
        if row.seq in by_seq or row.id in flagged:
            continue
        blob = _body_digest(row.payload)
        if blob is None or blob in usable:
            by_seq[row.seq] = row
    by_seq = dict(sorted(by_seq.items()))
    kept = {r.id for r in by_seq.values()}
    damaged = [(name, why) for name, why in found.damaged if name not in kept]
    needed = {d for d in (_body_digest(r.payload) for r in by_seq.values()) if d is not None}
    digests = sorted(needed | (set(found.blob_digests) & usable))
    return Scan(list(by_seq.values()), damaged, found.problems, digests)


def _body_digest(payload: str) -> str | None:
    try:
        body = decode_payload(payload).get("body")
    except ValueError:
        return None
    blob = body.get("blob") if isinstance(body, dict) else None
    return blob if isinstance(blob, str) else None


def _copy(
    source: Conn | None,
    found: Scan,
    pages: PageScan,
    target: Conn,
    read: Callable[[str], bytes],
    put: BlobPut,
) -> SalvageReport:
    sids = {row.session_id for row in found.rows}
    sessions = _sessions(source, sids, pages.sessions)
    ordered = sorted(sessions.values(), key=lambda s: (s.created_at, s.id))
    for info in ordered:
        insert_session(
            target,
            info.id,
            parent_id=None,
            cwd=info.cwd,
            model=info.model,
            title=info.title,
            source=info.source,
            created_at=info.created_at,
        )
    # Parents once every session exists (a damaged creation time may misorder them); a parent
    # that was not salvaged is dropped from its child.
    for info in ordered:
        if info.parent_id in sessions and info.parent_id != info.id:
            target.execute(
                "UPDATE sessions SET parent_id = ? WHERE id = ?", (info.parent_id, info.id)
            )
    for digest in found.blob_digests:
        put(target, read(digest), digest)
    for row in found.rows:
        insert_entry(target, row.session_id, row.kind, row.payload, row.id, row.created_at)
    for info in ordered:
        target.execute("UPDATE sessions SET status = ? WHERE id = ?", (info.status, info.id))
    return SalvageReport(
        sessions=len(sessions),
        entries=len(found.rows),
        blobs=len(found.blob_digests),
        damaged=tuple(dict.fromkeys(name for name, _ in found.damaged)),
    )


def salvage(source_path: Path | str, target: Conn, put: BlobPut) -> SalvageReport:
    """Copy every intact entry of `source_path` (a ledger file, or a PostgreSQL URL) through
    `target` (inside its transaction), storing blobs with `put`.

    Raises:
        LedgerError: the source cannot be opened at all.
    """
    if is_pg_url(source_path):
        return _salvage_pg(str(source_path), target, put)
    source_path = sqlite_path(source_path)
    # No version check: a flipped byte in the header can make a ledger claim any schema, and
    # only rows that hash to their recorded content are copied.
    pages = scan_pages(source_path)
    source: sqlite3.Connection | None = open_read_only(source_path, check=False)
    assert source is not None
    # Text read as bytes throughout: damage can turn a column's stored type (a blob read as
    # text that is not UTF-8), and the scan accepted the bytes, not a decoding of them.
    source.text_factory = bytes
    try:
        try:
            found = scan(source, None)
        except READ_ERRORS as exc:
            if not pages.entries:
                raise LedgerError(f"{source_path}: unreadable as a ledger ({exc})") from exc
            # The schema itself does not read: what the pages hold is all there is.
            source.close()
            source = None
            found = Scan([], [], [f"{source_path}: unreadable through SQL ({exc})"], [])
        sql = source
        merged = _merge(found, pages)
        return _copy(sql, merged, pages, target, lambda d: _read_blob(sql, d, pages), put)
    finally:
        if source is not None:
            source.close()


def _salvage_pg(url: str, target: Conn, put: BlobPut) -> SalvageReport:
    """Salvage from a PostgreSQL ledger: its pages are the server's to keep whole, so the scan
    re-hashes rows and blobs and copies those that match."""
    import comal.ledger.pg as pg  # psycopg is imported only where PostgreSQL is used

    source = pg.open_existing(url)
    try:

        def read(digest: str) -> bytes:
            data = pg.read_blob(source, digest)
            if data is None:
                raise LedgerError(f"blob {digest} became unreadable while salvaging")
            return data

        return _copy(source, pg.scan(source, None), PageScan(), target, read, put)
    finally:
        if source is not None:
            source.close()
