"""Content-addressed blob storage inside the ledger's SQLite file.

Invariants: a blob's key is `sha256:<hex>` of its exact bytes; a blob is written once (a second
store of the same bytes writes nothing); blobs are never updated or deleted. Every function
runs inside the caller's transaction or read.
"""

from __future__ import annotations

import sqlite3

from comal.messages import digest_bytes


def has_blob(conn: sqlite3.Connection, digest: str) -> bool:
    """Whether a blob with this digest is stored."""
    return conn.execute("SELECT 1 FROM blobs WHERE hash = ?", (digest,)).fetchone() is not None


def insert_blob(conn: sqlite3.Connection, data: bytes, digest: str | None = None) -> str:
    """Store `data` unless already present; return its digest (pass it if already known)."""
    digest = digest or digest_bytes(data)
    # Check first so a large duplicate is not written only to be ignored.
    if not has_blob(conn, digest):
        conn.execute(
            "INSERT INTO blobs (hash, size_bytes, data) VALUES (?, ?, ?)",
            (digest, len(data), data),
        )
    return digest


def read_blob(conn: sqlite3.Connection, digest: str) -> bytes | None:
    """The exact bytes stored under `digest`, or None."""
    row = conn.execute("SELECT rowid FROM blobs WHERE hash = ?", (digest,)).fetchone()
    if row is None:
        return None
    # Incremental blob I/O reads a large blob about twice as fast as a column fetch.
    with conn.blobopen("blobs", "data", row[0], readonly=True) as handle:
        return handle.read()
