"""Content-addressed blob storage inside the ledger's SQLite file.

Invariants: a blob's key is `sha256:<hex>` of its exact bytes; a blob is written once (a second
store of the same bytes writes nothing); blobs are never updated or deleted. A blob of at least
`INDEX_MIN_BYTES` is stored with its page index (`pages.py`) in the same transaction. Every
function runs inside the caller's transaction or read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from comal.ledger.conn import Conn
from comal.ledger.pages import INDEX_MIN_BYTES, ReadRange, index_of_bytes, write_page_index
from comal.messages import digest_bytes

_STREAM_BYTES = 1 << 20
"""Blobs at least this large are written piecewise (see `insert_blob`); at most
`INDEX_MIN_BYTES`, so every indexed blob takes that path."""


def has_blob(conn: Conn, digest: str) -> bool:
    """Whether a blob with this digest is stored."""
    return conn.execute("SELECT 1 FROM blobs WHERE hash = ?", (digest,)).fetchone() is not None


def insert_blob(conn: sqlite3.Connection, data: bytes, digest: str | None = None) -> str:
    """Store `data` unless already present; return its digest (pass it if already known)."""
    digest = digest or digest_bytes(data)
    # Check first so a large duplicate is not written only to be ignored.
    if has_blob(conn, digest):
        return digest
    if len(data) < _STREAM_BYTES:
        conn.execute(
            "INSERT INTO blobs (hash, size_bytes, data) VALUES (?, ?, ?)",
            (digest, len(data), data),
        )
        return digest
    # A large blob is written in pieces into a zeroed one: binding it whole would make SQLite
    # copy all of it first, so storing a 50 MB output would hold several copies at once.
    cursor = conn.execute(
        "INSERT INTO blobs (hash, size_bytes, data) VALUES (?, ?, zeroblob(?))",
        (digest, len(data), len(data)),
    )
    view = memoryview(data)
    with conn.blobopen("blobs", "data", cursor.lastrowid or 0) as handle:
        for start in range(0, len(data), _STREAM_BYTES):
            handle.write(view[start : start + _STREAM_BYTES])
    if len(data) >= INDEX_MIN_BYTES:
        # Built from the bytes in hand while they are stored: the first page read of this
        # output then decodes one stride, not the whole output.
        write_page_index(conn, digest, index_of_bytes(data))
    return digest


def read_blob(conn: sqlite3.Connection, digest: str) -> bytes | None:
    """The exact bytes stored under `digest`, or None."""
    row = conn.execute("SELECT rowid FROM blobs WHERE hash = ?", (digest,)).fetchone()
    if row is None:
        return None
    # Incremental blob I/O reads a large blob about twice as fast as a column fetch.
    with conn.blobopen("blobs", "data", row[0], readonly=True) as handle:
        return handle.read()


def blob_size(conn: Conn, digest: str) -> int | None:
    """The stored blob's length in bytes, or None."""
    row = conn.execute("SELECT size_bytes FROM blobs WHERE hash = ?", (digest,)).fetchone()
    return None if row is None else int(row[0])


@contextmanager
def blob_ranges(conn: sqlite3.Connection, digest: str) -> Iterator[ReadRange | None]:
    """A reader of byte ranges of one blob (None when there is no such blob), open for the
    block: successive reads of one handle move along the blob without walking it again."""
    row = conn.execute("SELECT rowid FROM blobs WHERE hash = ?", (digest,)).fetchone()
    if row is None:
        yield None
        return
    with conn.blobopen("blobs", "data", row[0], readonly=True) as handle:

        def read(start: int, end: int) -> bytes:
            handle.seek(start)
            return handle.read(max(0, end - start))

        yield read
