"""Copying a whole ledger to another engine (`comal ledger migrate --to …`), losslessly.

Every entry keeps its seq, id, kind, exact payload text, content hash and creation time (seqs
are named inside payloads: fork points, rewinds, checkpoints), every session its row, every
blob its bytes. Locks are not copied: no process holds the copy.

Invariants:
- One transaction per session on the target: its row, the blobs its payloads name and all its
  entries appear together or not at all, so a reader (or a copy killed midway) never sees half
  a session.
- Resumable: a session the target already holds whole is skipped; the target may hold nothing
  else (another ledger's sessions or seqs would collide), which is checked before anything is
  written.
- Parents and fork origins are copied before the sessions that name them.
- Blobs no entry names (kept by a rewind, say) are copied last, so the copy holds every blob.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from comal.errors import LedgerError
from comal.ledger.conn import Conn
from comal.ledger.entry import SessionInfo
from comal.ledger.session_rows import insert_session
from comal.ledger.verify import EntryRow

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")

Put = Callable[[Conn, bytes, str], str]
"""Stores a blob in the target (its engine's `insert_blob`)."""
Read = Callable[[str], bytes | None]
"""Reads a blob of the source."""


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What one run of a copy did."""

    sessions: int
    """Sessions copied by this run."""
    skipped: int
    """Sessions the target already held whole (copied by an earlier, interrupted run)."""
    entries: int
    blobs: int


def entry_rows(conn: Conn, session_id: str) -> list[EntryRow]:
    """A session's own entry rows, in seq order, as stored."""
    return [
        EntryRow(*row)
        for row in conn.execute(
            "SELECT seq, id, session_id, kind, payload, content_hash, created_at FROM entries"
            " WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
    ]


def ordered(sessions: list[SessionInfo]) -> list[SessionInfo]:
    """Sessions oldest first, each after its parent and its fork origin."""
    by_id = {s.id: s for s in sessions}
    done: set[str] = set()
    out: list[SessionInfo] = []

    def visit(info: SessionInfo, path: frozenset[str]) -> None:
        if info.id in done or info.id in path:
            return
        for up in (info.parent_id, info.fork_of):
            if up is not None and up in by_id:
                visit(by_id[up], path | {info.id})
        done.add(info.id)
        out.append(info)

    for info in sorted(sessions, key=lambda s: (s.created_at, s.id)):
        visit(info, frozenset())
    return out


def check_target(source: list[SessionInfo], target: list[SessionInfo]) -> set[str]:
    """The ids of the sessions the target already holds whole (to skip).

    Raises:
        LedgerError: the target holds a session the source lacks, or one only partly.
    """
    mine = {s.id: s for s in source}
    whole: set[str] = set()
    for held in target:
        ours = mine.get(held.id)
        if ours is None:
            raise LedgerError(
                f"the target already holds session {held.id}, which this ledger lacks;"
                " migrate into an empty ledger"
            )
        if held.entries != ours.entries:
            raise LedgerError(
                f"the target holds session {held.id} with {held.entries} entries, this ledger"
                f" {ours.entries}; it is not an earlier copy of this ledger"
            )
        whole.add(held.id)
    return whole


def named_blobs(rows: list[EntryRow]) -> list[str]:
    """Every blob digest a session's payloads name (bodies, media, kept files), once each."""
    return list(dict.fromkeys(m for row in rows for m in _DIGEST.findall(row.payload)))


def copy_session(
    target: Conn,
    info: SessionInfo,
    rows: list[EntryRow],
    read: Read,
    put: Put,
    insert_row: Callable[[Conn, EntryRow], None],
    has_blob: Callable[[Conn, str], bool],
) -> int:
    """Copy one session into `target` inside the caller's transaction; return blobs stored."""
    insert_session(
        target,
        info.id,
        parent_id=info.parent_id,
        cwd=info.cwd,
        model=info.model,
        title=info.title,
        source=info.source,
        created_at=info.created_at,
        fork_of=info.fork_of,
        fork_seq=info.fork_seq,
    )
    stored = 0
    for digest in named_blobs(rows):
        if has_blob(target, digest):
            continue
        data = read(digest)
        if data is not None:  # a digest-like string that names no blob
            put(target, data, digest)
            stored += 1
    for row in rows:
        insert_row(target, row)
    target.execute("UPDATE sessions SET status = ? WHERE id = ?", (info.status, info.id))
    return stored


def all_blobs(conn: Conn) -> Iterator[str]:
    """Every blob digest of a ledger."""
    for (digest,) in conn.execute("SELECT hash FROM blobs ORDER BY hash").fetchall():
        yield str(digest)


def fingerprint(conn: Conn) -> tuple[int, int, str]:
    """(entries, blobs, digest of every entry's seq, id and content hash): equal on two ledgers
    when they hold the same entries."""
    import hashlib

    hasher = hashlib.sha256()
    count = 0
    for seq, entry_id, digest in conn.execute(
        "SELECT seq, id, content_hash FROM entries ORDER BY seq"
    ):
        hasher.update(f"{seq}\0{entry_id}\0{digest}\n".encode())
        count += 1
    (blobs,) = conn.execute("SELECT count(*) FROM blobs").fetchone()
    return count, int(blobs), "sha256:" + hasher.hexdigest()
