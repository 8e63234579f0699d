"""Ledger verification: re-hash every entry and blob and report what does not match.

Checks, per entry: the payload is a JSON object stored in canonical form, its `content_hash`
matches kind + NUL + payload, and a `body` blob it names exists. Per blob: its bytes hash to its
key and its size matches. A whole-ledger check also runs `PRAGMA integrity_check`.
Verification only reads; problems are reported, never repaired.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass

from comal.ledger.canonical import content_hash, decode_payload
from comal.messages import canonical_json

_MAX_PROBLEMS = 1000
"""Stop listing after this many; the count in `ok` is what matters past that point."""


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of `Ledger.verify()`.

    Attributes:
        ok: True when no problem was found.
        entries: entries re-hashed.
        blobs: blobs re-hashed.
        problems: one readable line per problem found.
    """

    ok: bool
    entries: int
    blobs: int
    problems: tuple[str, ...]


def _entry_problems(
    seq: int, kind: str, payload: str, stored_hash: str
) -> tuple[list[str], str | None]:
    """Problems of one entry row, and the body blob it references (if any)."""
    problems: list[str] = []
    if content_hash(kind, payload) != stored_hash:
        problems.append(f"entry seq {seq} ({kind}): content hash mismatch")
    try:
        decoded = decode_payload(payload)
    except ValueError as exc:
        problems.append(f"entry seq {seq} ({kind}): payload is not a JSON object: {exc}")
        return problems, None
    if canonical_json(decoded) != payload:
        problems.append(f"entry seq {seq} ({kind}): payload is not canonical JSON")
    body = decoded.get("body")
    blob = body.get("blob") if isinstance(body, dict) else None
    return problems, blob if isinstance(blob, str) else None


def _blob_problem(digest: str, size_bytes: int, data: bytes) -> str | None:
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if actual != digest:
        return f"blob {digest}: content hashes to {actual}"
    if len(data) != size_bytes:
        return f"blob {digest}: size {len(data)} bytes, recorded {size_bytes}"
    return None


def verify_ledger(conn: sqlite3.Connection, session_id: str | None) -> VerifyReport:
    """Re-hash the entries (of one session, or all) and the blobs they can reach.

    For a single session only the blobs its entries reference are checked; for the whole
    ledger every blob is, plus SQLite's own integrity check.
    """
    problems: list[str] = []
    if session_id is None:
        problems.extend(
            f"sqlite integrity: {row[0]}"
            for row in conn.execute("PRAGMA integrity_check")
            if row[0] != "ok"
        )
        rows = conn.execute("SELECT seq, kind, payload, content_hash FROM entries ORDER BY seq")
    else:
        rows = conn.execute(
            "SELECT seq, kind, payload, content_hash FROM entries WHERE session_id = ?"
            " ORDER BY seq",
            (session_id,),
        )
    entries = 0
    referenced: dict[str, int] = {}
    for seq, kind, payload, stored_hash in rows:
        entries += 1
        found, blob = _entry_problems(seq, kind, payload, stored_hash)
        problems.extend(found)
        if blob is not None:
            referenced.setdefault(blob, seq)

    blobs = 0
    seen: set[str] = set()
    if session_id is None:
        digests = [row[0] for row in conn.execute("SELECT hash FROM blobs ORDER BY hash")]
    else:
        digests = sorted(referenced)
    for digest in digests:
        # One blob in memory at a time: a ledger can hold many large outputs.
        row = conn.execute(
            "SELECT size_bytes, data FROM blobs WHERE hash = ?", (digest,)
        ).fetchone()
        if row is None:
            continue
        seen.add(digest)
        blobs += 1
        problem = _blob_problem(digest, row[0], row[1])
        if problem is not None:
            problems.append(problem)
    problems.extend(
        f"entry seq {seq}: body blob {digest} is missing"
        for digest, seq in sorted(referenced.items(), key=lambda item: item[1])
        if digest not in seen
    )
    shown = problems[:_MAX_PROBLEMS]
    if len(problems) > _MAX_PROBLEMS:
        shown.append(f"… and {len(problems) - _MAX_PROBLEMS} more problems")
    return VerifyReport(ok=not problems, entries=entries, blobs=blobs, problems=tuple(shown))
