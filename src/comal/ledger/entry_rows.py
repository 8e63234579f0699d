"""The `entries` table: what an entry row stores, and the SQL behind the `Ledger`'s entry methods.

Every SQL function runs inside the caller's transaction or read (the `Ledger` serialises
them); none commits. An entry row is written once and never changed (triggers in `schema.py`);
its `content_hash` is computed from the kind and the canonical payload text it stores.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from comal.errors import SALVAGE_HINT, LedgerDamagedError, LedgerError
from comal.ids import new_id, now_ms
from comal.ledger.blobs import has_blob
from comal.ledger.bulk import BULK_ENTRIES, paused_gc
from comal.ledger.canonical import check_kind, content_hash, decode_payload, encode_payload
from comal.ledger.conn import Conn
from comal.ledger.entry import Entry
from comal.messages import JSONObject, JSONValue, digest_bytes

ENTRY_COLUMNS = "seq, id, session_id, kind, payload, content_hash, created_at"


def damaged_payload(seq: object, entry_id: object, exc: Exception) -> LedgerDamagedError:
    """The error for a stored payload that does not decode (a flipped byte on disk)."""
    return LedgerDamagedError(
        f"entry {entry_id} (seq {seq}) is damaged: its payload does not decode ({exc});"
        f" {SALVAGE_HINT}"
    )


def _decoded(seq: int, entry_id: str, payload: str) -> JSONObject:
    try:
        return decode_payload(payload)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError included
        raise damaged_payload(seq, entry_id, exc) from exc


def _name_damaged(conn: Conn, sql: str, params: list[str | int]) -> None:
    """Raise the error naming the first entry of a query whose payload does not decode.

    Read again as bytes, row by row: only after a read failed, never on the hot path. SQLite
    only: the file's bytes are what damage flips (a PostgreSQL server checks its own pages).
    """
    if not isinstance(conn, sqlite3.Connection):
        return
    raw_sql = sql.replace("payload,", "CAST(payload AS BLOB),", 1)
    for seq, entry_id, _, raw, _, _ in conn.execute(raw_sql + " ORDER BY seq", params):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise damaged_payload(seq, entry_id, exc) from exc
        _decoded(seq, entry_id, text)


def entry_from_row(row: tuple[int, str, str, str, str, str, int]) -> Entry:
    """The value of one `ENTRY_COLUMNS` row.

    Raises:
        LedgerDamagedError: the stored payload does not decode.
    """
    seq, entry_id, session_id, kind, payload, digest, created_at = row
    return Entry(
        seq, entry_id, session_id, kind, _decoded(seq, entry_id, payload), digest, created_at
    )


def entry_payload(
    kind: str, payload: JSONObject, body: bytes | None
) -> tuple[str, JSONObject, str | None]:
    """Check an entry before it is appended: its canonical text, decoded payload, body digest.

    With `body`, the payload gains `"body": {"blob": "sha256:<hex>", "size_bytes": n}` and the
    digest is returned (None without a body).

    Raises:
        LedgerError: bad kind, a payload that is not a JSON object, or `body` given while the
            payload already has one.
    """
    check_kind(kind)
    if not isinstance(payload, dict):
        raise LedgerError(f"entry payload must be a JSON object, got {type(payload).__name__}")
    digest: str | None = None
    if body is not None:
        if "body" in payload:
            raise LedgerError("payload already has a 'body'; pass the bytes or the ref")
        digest = digest_bytes(body)
        payload = {**payload, "body": {"blob": digest, "size_bytes": len(body)}}
    text, decoded = encode_payload(payload)
    return text, decoded, digest


def insert_entry(
    conn: Conn,
    session_id: str,
    kind: str,
    text: str,
    entry_id: str | None = None,
    created_at: int | None = None,
) -> int:
    """Insert one entry row (payload `text` is canonical JSON) and return its seq."""
    row = conn.execute(
        "INSERT INTO entries (id, session_id, kind, payload, content_hash, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
        (
            entry_id or new_id("evt"),
            session_id,
            kind,
            text,
            content_hash(kind, text),
            now_ms() if created_at is None else created_at,
        ),
    ).fetchone()
    return int(row[0])


def blob_ref(body: JSONValue) -> str | None:
    """The digest a payload's well-formed `body` reference names (None for any other value)."""
    digest = body.get("blob") if isinstance(body, dict) else None
    return digest if isinstance(digest, str) else None


def require_body_blob(conn: Conn, body: JSONValue) -> None:
    """Check that a payload's `body` reference (if any) names a stored blob.

    Raises:
        LedgerError: `body` is not a blob reference, or names a blob the ledger lacks.
    """
    if body is None:
        return
    digest = blob_ref(body)
    if digest is None:
        raise LedgerError("payload 'body' must be {'blob': 'sha256:…', 'size_bytes': n}")
    if not has_blob(conn, digest):
        raise LedgerError(f"payload 'body' names blob {digest}, which the ledger lacks")


def select_entries(
    conn: Conn, session_id: str, after_seq: int, kinds: Collection[str] | None
) -> list[Entry]:
    """The session's entries with `seq > after_seq`, in seq order, optionally of some kinds."""
    # Every row holds `session_id`: it is not fetched again for each (a string per row).
    sql = (
        "SELECT seq, id, kind, payload, content_hash, created_at FROM entries"
        " WHERE session_id = ? AND seq > ?"
    )
    params: list[str | int] = [session_id, after_seq]
    if kinds is not None:
        wanted = sorted(set(kinds))
        if not wanted:
            return []
        sql += f" AND kind IN ({', '.join('?' * len(wanted))})"
        params.extend(wanted)
    # The fetch itself makes a tuple per row: thousands of them for a resumed session, so it
    # runs with the collector paused too (a few new rows cost no collection either way). Rows
    # are decoded as they come: each one's text is freed for the next ones to reuse, where
    # fetching them all first needed new memory for all of them (a new process pays a page
    # fault per 4 KiB it touches first).
    # PostgreSQL's driver holds the whole result already, and makes its rows far faster all
    # at once (in C) than one by one.
    with paused_gc() as pause:
        try:
            rows = conn.execute(sql + " ORDER BY seq", params)
            found = [
                Entry(seq, entry_id, session_id, kind, decode_payload(payload), digest, created)
                for seq, entry_id, kind, payload, digest, created in (
                    rows if isinstance(conn, sqlite3.Connection) else rows.fetchall()
                )
            ]
        except (ValueError, sqlite3.OperationalError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and "decode" not in str(exc):
                raise
            _name_damaged(conn, sql, params)
            raise
        pause.settle = len(found) >= BULK_ENTRIES
        return found


def first_entries(conn: Conn, kind: str) -> dict[str, Entry]:
    """Each session's first entry of `kind` (one query, for listings)."""
    # SQLite reads the payload as bytes (damage can leave text that is not UTF-8); a
    # PostgreSQL server only holds valid text, and has no BLOB type to cast to.
    sqlite = isinstance(conn, sqlite3.Connection)
    columns = (
        ENTRY_COLUMNS.replace("payload,", "CAST(payload AS BLOB),", 1) if sqlite else ENTRY_COLUMNS
    )
    rows = conn.execute(
        f"SELECT {columns} FROM entries WHERE seq IN"
        " (SELECT MIN(seq) FROM entries WHERE kind = ? GROUP BY session_id)",
        (kind,),
    ).fetchall()
    found: dict[str, Entry] = {}
    for seq, entry_id, session_id, kind_, raw, digest, created_at in rows:
        # A listing shows what reads: a damaged first entry only loses its session's title.
        try:
            payload = decode_payload(raw if isinstance(raw, str) else bytes(raw).decode("utf-8"))
        except ValueError:
            continue
        found[session_id] = Entry(seq, entry_id, session_id, kind_, payload, digest, created_at)
    return found


def select_entry(conn: Conn, entry_id: str) -> Entry | None:
    """One entry by its `evt_` id, or None."""
    row = conn.execute(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ?", (entry_id,)).fetchone()
    return None if row is None else entry_from_row(row)


def kind_entries(conn: Conn, kinds: Collection[str]) -> list[Entry]:
    """Every session's entries of `kinds`, in seq order (for listings: hosts, say)."""
    wanted = sorted(set(kinds))
    if not wanted:
        return []
    rows = conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM entries WHERE kind IN ({', '.join('?' * len(wanted))})"
        " ORDER BY seq",
        wanted,
    ).fetchall()
    return [entry_from_row(row) for row in rows]
