"""Ledger verification: re-hash every entry and blob and report what does not match.

Checks, per entry: every field is readable text, the payload is a JSON object stored in
canonical form, its `content_hash` matches kind + NUL + payload, and a `body` blob it names
exists and is intact. Per blob: its bytes hash to its key and its size matches. A whole-ledger
check also runs `PRAGMA integrity_check` and checks every stored page index (derived data: one
that does not check is reported, and rebuilt from its blob when read). Verification only
reads; problems are reported, never repaired.

The ledger may be damaged (flipped bytes, a truncated file), so nothing here trusts a full
scan: rows are listed from the table and from both of its indexes, each as far as it reads,
then every seq up to the largest one seen is fetched on its own. A row that cannot be read is
reported by its seq; a row that reads but does not match, by its `evt_` id. The intact rows
are what `salvage` copies (see `salvage.py`).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from comal.ledger.canonical import content_hash, decode_payload
from comal.ledger.pages import page_index_problems
from comal.messages import canonical_json

_MAX_PROBLEMS = 1000
"""Stop listing after this many; the count in `ok` is what matters past that point."""

_PROBE_PAST_END = 64
"""Seqs probed past the largest one listed, until this many in a row are absent."""

_MIN_ROW_BYTES = 64
"""No entry row is smaller (its id and content hash alone take 100 bytes), so a file of N bytes
holds at most N // 64 of them: that bounds the seqs a damaged one can send us looking for."""

_ENTRY_COLUMNS = "seq, id, session_id, kind, payload, content_hash, created_at"

READ_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)
"""What reading a damaged file raises: SQLite's errors, or a UnicodeDecodeError when Python
decodes an error message quoting damaged schema text."""


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of `Ledger.verify()`.

    Attributes:
        ok: True when no problem was found.
        entries: entries re-hashed.
        blobs: blobs re-hashed.
        problems: one readable line per problem found.
        damaged: the damaged or doubtful entries, by `evt_` id (`seq N` when the id does not
            read).
    """

    ok: bool
    entries: int
    blobs: int
    problems: tuple[str, ...]
    damaged: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EntryRow:
    """One entry row as stored, read as text."""

    seq: int
    id: str
    session_id: str
    kind: str
    payload: str
    content_hash: str
    created_at: int


@dataclass(slots=True)
class Scan:
    """What a damage-tolerant read of the entries and blobs found."""

    rows: list[EntryRow]
    """Entries that read and match their hash, with an intact body blob if they name one."""
    damaged: list[tuple[str, str]]
    """(entry id or `seq N`, problem) for every entry that is not intact."""
    problems: list[str]
    blob_digests: list[str]
    """Blobs that read and hash to their key."""
    doubts: list[tuple[str, str]] = field(default_factory=list)
    """(entry id, problem) for intact rows kept despite a doubt (an index that disagrees)."""
    entries_seen: int = 0
    blobs_seen: int = 0


@contextmanager
def _as_bytes(conn: sqlite3.Connection) -> Iterator[None]:
    """Read TEXT columns as bytes, so a damaged one is a finding, not a UnicodeDecodeError."""
    before = conn.text_factory
    conn.text_factory = bytes
    try:
        yield
    finally:
        conn.text_factory = before


def _listed(conn: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> list[object]:
    """The first column of `sql`'s rows, as far as the file reads."""
    found: list[object] = []
    try:
        for row in conn.execute(sql, params):
            found.append(row[0])
    except READ_ERRORS:
        pass
    return found


def _text(value: object, name: str) -> str:
    if not isinstance(value, bytes):
        raise ValueError(f"{name} is {type(value).__name__}, not text")
    return value.decode("utf-8")


def _row(raw: tuple[object, ...], fallback_created: int) -> EntryRow:
    """The row as text. A creation time that reads but is no integer (its type byte flipped
    to a blob or text of the same width) is not hashed: the previous entry's time stands in,
    as for one that does not read at all."""
    seq, entry_id, session_id, kind, payload, stored_hash, created = raw
    if not isinstance(seq, int):
        raise ValueError("seq is not an integer")
    if not isinstance(created, int):
        created = fallback_created
    return EntryRow(
        seq,
        _text(entry_id, "id"),
        _text(session_id, "session_id"),
        _text(kind, "kind"),
        _text(payload, "payload"),
        _text(stored_hash, "content_hash"),
        created,
    )


def entry_problems(row: EntryRow) -> tuple[list[str], str | None]:
    """Problems of one readable entry row, and the body blob it references (if any)."""
    problems: list[str] = []
    where = f"entry {row.id} (seq {row.seq}, {row.kind})"
    try:
        matches = content_hash(row.kind, row.payload) == row.content_hash
    except UnicodeEncodeError:
        matches = False
    if not matches:
        problems.append(f"{where}: content hash mismatch")
    try:
        decoded = decode_payload(row.payload)
    except ValueError as exc:
        problems.append(f"{where}: payload is not a JSON object: {exc}")
        return problems, None
    if canonical_json(decoded) != row.payload:
        problems.append(f"{where}: payload is not canonical JSON")
    body = decoded.get("body")
    blob = body.get("blob") if isinstance(body, dict) else None
    return problems, blob if isinstance(blob, str) else None


_EVT_ID = re.compile(r"evt_[0-9a-f]{32}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _confirmed(conn: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> bool | None:
    """Whether a lookup finds the row (None when the table or index cannot be read)."""
    try:
        return conn.execute(sql, params).fetchone() is not None
    except READ_ERRORS:
        return None


def _session_known(conn: sqlite3.Connection, row: EntryRow) -> bool | None:
    """Whether the row's session is recorded, or the index's copy agrees with the row's
    (True); whether the row's copy is the one that was flipped (False); or None when the
    two copies disagree and nothing says which is right.

    (A flipped session id names no session; the sessions table or index may be what is
    damaged, so either confirmation is enough.)
    """
    if _confirmed(conn, "SELECT 1 FROM sessions WHERE id = ?", (row.session_id,)):
        return True
    if _confirmed(
        conn,
        "SELECT 1 FROM entries INDEXED BY entries_by_session WHERE session_id = ? AND seq = ?",
        (row.session_id, row.seq),
    ):
        return True
    # Neither copy confirms: a flipped row still has its index entry under the true session
    # (a disagreement); an index that lost the entry altogether is damage to the index only.
    # (A full index scan, but only on this rare path.)
    if not _UUID.fullmatch(row.session_id):
        return False
    try:
        other = conn.execute(
            "SELECT session_id FROM entries INDEXED BY entries_by_session WHERE seq = ?",
            (row.seq,),
        ).fetchone()
    except READ_ERRORS:
        return True
    if other is None:
        return True
    # The index files the seq under another session. The row is the flipped copy only when
    # the sessions table confirms the index's; when it confirms neither (it is damaged too),
    # the table's row stands, kept as recorded and reported as a doubt, as for ids.
    index_sid = other[0].decode("utf-8", "replace") if isinstance(other[0], bytes) else other[0]
    if _confirmed(conn, "SELECT 1 FROM sessions WHERE id = ?", (index_sid,)):
        return False
    return None


def _id_problems(conn: sqlite3.Connection, row: EntryRow) -> tuple[list[str], list[str]]:
    """(damage, doubts) about a row's id, which its content hash does not cover.

    A malformed id is damage; a well-formed one its index disagrees with is kept — the table
    is the record, the index derived from it — but reported as a doubt.
    """
    where = f"entry {row.id!r} (seq {row.seq}, {row.kind})"
    if not _EVT_ID.fullmatch(row.id):
        return [f"{where}: its id is malformed"], []
    agrees = _confirmed(
        conn,
        "SELECT 1 FROM entries INDEXED BY sqlite_autoindex_entries_1 WHERE id = ? AND seq = ?",
        (row.id, row.seq),
    )
    if agrees is False:
        return [], [f"{where}: its id disagrees with the ledger's index (kept as recorded)"]
    return [], []


def _blob_problem(digest: str, size_bytes: object, data: object) -> tuple[str | None, bool]:
    """(problem, usable): a blob whose bytes hash to its key is usable even when its recorded
    size is damaged (the size is derived from the bytes, and a copy records it afresh)."""
    if not isinstance(data, bytes):
        return f"blob {digest}: data unreadable", False
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if actual != digest:
        return f"blob {digest}: content hashes to {actual}", False
    if len(data) != size_bytes:
        return f"blob {digest}: size {len(data)} bytes, recorded {size_bytes!r}", True
    return None, True


def _candidate_seqs(conn: sqlite3.Connection, session_id: str | None) -> list[int]:
    where, params = ("WHERE session_id = ?", (session_id,)) if session_id else ("", ())
    seen: set[int] = set()
    for index in ("", " INDEXED BY entries_by_session", " INDEXED BY sqlite_autoindex_entries_1"):
        sql = f"SELECT seq FROM entries{index} {where}"
        seen.update(s for s in _listed(conn, sql, params) if isinstance(s, int))
    if session_id is None:
        # Seqs are assigned one after another: one missing from every listing was lost. The
        # listings may stop early too, so seqs past the largest one seen are probed until
        # a run of them is absent.
        # A flipped seq can be any 64-bit number: gaps are filled only up to as many rows as
        # the file can hold; a larger seq is still read (as listed), not searched below.
        bound = _most_rows(conn) or 2 * len(seen) + _PROBE_PAST_END
        top = max((s for s in seen if s <= bound), default=0)
        seen.update(range(1, top + 1))
        misses, probe = 0, top + 1
        while misses < _PROBE_PAST_END:
            try:
                hit = conn.execute("SELECT 1 FROM entries WHERE seq = ?", (probe,)).fetchone()
            except READ_ERRORS:
                hit = None  # past every listing, an unreadable seq is not known to exist
            if hit is None:
                misses += 1
            else:
                misses = 0
                seen.update(range(top + 1, probe + 1))
                top = probe
            probe += 1
    return sorted(seen)


def _most_rows(conn: sqlite3.Connection) -> int:
    """How many entry rows the file could hold at most, from its size (0 when unreadable)."""
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()
        size = conn.execute("PRAGMA page_size").fetchone()
    except READ_ERRORS:
        return 0
    if pages is None or size is None:
        return 0
    return int(pages[0]) * int(size[0]) // _MIN_ROW_BYTES


def _blob_digests(conn: sqlite3.Connection) -> set[str]:
    found: set[str] = set()
    for index in ("", " INDEXED BY sqlite_autoindex_blobs_1"):
        for value in _listed(conn, f"SELECT hash FROM blobs{index}"):
            if isinstance(value, bytes):
                found.add(value.decode("utf-8", "replace"))
    return found


def _read_blob(conn: sqlite3.Connection, digest: str) -> tuple[bool, str | None, bool]:
    """(found, problem, usable) for one blob, read in full (one in memory at a time).

    The bytes and the recorded size are read apart: a damaged size (or its column's name in
    a damaged schema) does not make intact bytes unusable.
    """
    try:
        row = conn.execute("SELECT data FROM blobs WHERE hash = ?", (digest,)).fetchone()
    except READ_ERRORS as exc:
        return True, f"blob {digest}: unreadable ({exc})", False
    if row is None:
        return False, None, False
    try:
        size = conn.execute("SELECT size_bytes FROM blobs WHERE hash = ?", (digest,)).fetchone()
    except READ_ERRORS as exc:
        size = (f"unreadable ({exc})",)
    return True, *_blob_problem(digest, None if size is None else size[0], row[0])


def _read_row(
    conn: sqlite3.Connection, seq: int, fallback_created: int
) -> tuple[object, ...] | None:
    """One entry row by seq. Its creation time is not hashed and nothing depends on it: when
    only that column fails to read, the previous entry's time stands in, keeping the order."""
    try:
        row = conn.execute(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE seq = ?", (seq,)).fetchone()
    except READ_ERRORS:
        row = conn.execute(
            "SELECT seq, id, session_id, kind, payload, content_hash FROM entries WHERE seq = ?",
            (seq,),
        ).fetchone()
        return None if row is None else (*row, fallback_created)
    return None if row is None else tuple(row)


def scan(conn: sqlite3.Connection, session_id: str | None) -> Scan:
    """Read every entry (of one session, or all) and the blobs they can reach, tolerating
    damage; for the whole ledger also every blob and SQLite's integrity check."""
    with _as_bytes(conn):
        return _scan(conn, session_id)


def _scan(conn: sqlite3.Connection, session_id: str | None) -> Scan:
    result = Scan([], [], [], [])
    if session_id is None:
        try:
            result.problems.extend(
                f"sqlite integrity: {bytes(row[0]).decode('utf-8', 'replace')}"
                if isinstance(row[0], bytes)
                else f"sqlite integrity: {row[0]}"
                for row in conn.execute("PRAGMA integrity_check(100)")
                if row[0] not in (b"ok", "ok")
            )
        except READ_ERRORS as exc:
            result.problems.append(f"sqlite integrity: {exc}")
    readable: list[tuple[EntryRow, str | None]] = []
    unplaced: list[tuple[EntryRow, str | None]] = []
    last_created = 0
    for seq in _candidate_seqs(conn, session_id):
        try:
            raw = _read_row(conn, seq, last_created)
        except READ_ERRORS as exc:
            result.entries_seen += 1
            result.damaged.append((f"seq {seq}", f"entry seq {seq}: unreadable ({exc})"))
            continue
        if raw is None:
            result.entries_seen += 1
            result.damaged.append((f"seq {seq}", f"entry seq {seq}: missing"))
            continue
        try:
            row = _row(tuple(raw), last_created)
        except (ValueError, UnicodeDecodeError) as exc:
            result.entries_seen += 1
            result.damaged.append((f"seq {seq}", f"entry seq {seq}: unreadable field ({exc})"))
            continue
        if not isinstance(raw[-1], int):
            result.problems.append(f"entry {row.id} (seq {seq}): creation time unreadable")
        last_created = row.created_at
        if session_id is not None and row.session_id != session_id:
            continue
        result.entries_seen += 1
        found, blob = entry_problems(row)
        damage, doubts = _id_problems(conn, row)
        found += damage
        result.doubts.extend((row.id, doubt) for doubt in doubts)
        if found:
            result.damaged.extend((row.id, problem) for problem in found)
            continue
        known = _session_known(conn, row)
        if known is None:
            result.doubts.append(
                (
                    row.id,
                    f"entry {row.id!r} (seq {row.seq}, {row.kind}): its session"
                    " disagrees with the ledger's index (kept as recorded)",
                )
            )
        if known is False:
            unplaced.append((row, blob))
        else:
            readable.append((row, blob))
    # A session id that other intact rows carry too is no flipped byte: those rows stand.
    counts = Counter(row.session_id for row, _ in (*readable, *unplaced))
    for row, blob in unplaced:
        if counts[row.session_id] > 1:
            readable.append((row, blob))
        else:
            where = f"entry {row.id!r} (seq {row.seq}, {row.kind})"
            result.damaged.append(
                (row.id, f"{where}: its session {row.session_id!r} is not recorded")
            )
    readable.sort(key=lambda item: item[0].seq)

    usable: set[str] = set()
    present: set[str] = set()
    digests = _blob_digests(conn) if session_id is None else set()
    digests.update(blob for _, blob in readable if blob is not None)
    for digest in sorted(digests):
        found_blob, problem, ok = _read_blob(conn, digest)
        if not found_blob:
            continue
        present.add(digest)
        result.blobs_seen += 1
        if ok:
            usable.add(digest)
            result.blob_digests.append(digest)
        if problem is not None:
            result.problems.append(problem)
    if session_id is None:
        result.problems.extend(page_index_problems(conn))
    for row, blob in readable:
        if blob is None or blob in usable:
            result.rows.append(row)
        else:
            state = "damaged" if blob in present else "missing"
            result.damaged.append(
                (row.id, f"entry {row.id} (seq {row.seq}): body blob {blob} is {state}")
            )
    return result


def entry_doubts(conn: sqlite3.Connection, seqs: Sequence[int]) -> list[tuple[str, str]]:
    """(entry id, problem) for the entries at `seqs` that are not what was recorded.

    Each row's stored kind and payload text are hashed again and compared with its
    `content_hash` (exactly, as `verify` does, without its blob checks); entries of a session
    that is not recorded are listed too (a flipped byte in a `session_id` moves an entry out
    of its session, where no per-session read would see it). What resume checks before it acts.
    """
    found: list[tuple[str, str]] = []
    wanted = set(seqs)
    with _as_bytes(conn):
        rows = (
            conn.execute(
                "SELECT seq, id, kind, payload, content_hash FROM entries"
                " WHERE seq BETWEEN ? AND ?",
                (min(wanted), max(wanted)),
            )
            if wanted
            else ()
        )
        for seq, entry_id, kind, payload, stored in rows:
            if seq not in wanted:
                continue  # another session's, between a fork's parent entries and its own
            wanted.discard(seq)
            # `content_hash` on the stored bytes (a canonical payload is ASCII, so any other
            # byte is damage and cannot hash to the recorded digest).
            ok = (
                isinstance(kind, bytes)
                and isinstance(payload, bytes)
                and isinstance(stored, bytes)
                and stored
                == b"sha256:" + hashlib.sha256(kind + b"\0" + payload).hexdigest().encode()
            )
            if not ok:
                name = bytes(entry_id).decode("utf-8", "replace")
                found.append((name, f"entry {name} (seq {seq}) does not verify"))
        for seq in sorted(wanted):
            found.append((f"seq {seq}", f"entry seq {seq} no longer reads"))
        for seq, entry_id in conn.execute(
            "SELECT seq, id FROM entries WHERE session_id NOT IN (SELECT id FROM sessions)"
            " ORDER BY seq LIMIT 20"
        ):
            name = bytes(entry_id).decode("utf-8", "replace")
            found.append((name, f"entry {name} (seq {seq}) names a session that is not recorded"))
    return found


def verify_ledger(conn: sqlite3.Connection, session_id: str | None) -> VerifyReport:
    """Re-hash the entries (of one session, or all) and the blobs they can reach.

    For a single session only the blobs its entries reference are checked; for the whole
    ledger every blob is, plus SQLite's own integrity check.
    """
    return report(scan(conn, session_id))


def report(found: Scan) -> VerifyReport:
    """The report of a scan (of either engine)."""
    flagged = found.damaged + found.doubts
    problems = [problem for _, problem in flagged] + found.problems
    damaged = tuple(dict.fromkeys(name for name, _ in flagged))
    shown = problems[:_MAX_PROBLEMS]
    if len(problems) > _MAX_PROBLEMS:
        shown.append(f"… and {len(problems) - _MAX_PROBLEMS} more problems")
    return VerifyReport(
        ok=not problems,
        entries=found.entries_seen,
        blobs=found.blobs_seen,
        problems=tuple(shown),
        damaged=damaged,
    )
