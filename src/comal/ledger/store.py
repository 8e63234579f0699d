"""The Ledger: Comal's durable, append-only book, in one SQLite file or on a PostgreSQL server.

Invariants (both engines; `ledger/engine.py` says what differs between them):
- Every append is one `BEGIN IMMEDIATE` transaction (autocommit connection, explicit
  transactions); with `durable=True` the WAL is synced on every commit (`synchronous=FULL`), so
  an entry whose append returned survives a crash of the process or the machine.
- Entries and blobs are never updated or deleted (triggers in `schema.py`); only a session's
  status and title and the locks table change.
- Blobs are content-addressed (`sha256:<hex>`) and stored once.
- The database file and its companions (WAL, SHM, the writers' turn) are created 0600. A
  ledger written by a newer schema is refused before any write.
- All SQL lives in this package (the tables' statements in `session_rows`, `entry_rows`,
  `blobs` and `locks`; this class holds the transactions around them); callers see only
  `Entry`, `SessionInfo`, `LockInfo` and `VerifyReport` values, whichever engine stands
  behind the methods (`Ledger.open` takes a path or a `postgresql://` URL).
- On PostgreSQL an append is as much one transaction as on SQLite (`ledger/pg.py`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from comal.errors import LedgerError, LedgerUnavailableError, UnknownEntryError
from comal.ids import new_id, now_ms
from comal.ledger.blobs import blob_size, has_blob
from comal.ledger.canonical import content_hash, encode_payload
from comal.ledger.conn import Conn
from comal.ledger.copy import (
    CopyReport,
    all_blobs,
    check_target,
    copy_session,
    entry_rows,
    fingerprint,
    ordered,
)
from comal.ledger.engine import Engine, SqliteEngine, is_pg_url, sqlite_path, write_transaction
from comal.ledger.entry import Entry, SessionInfo
from comal.ledger.entry_cache import EntryCache
from comal.ledger.entry_rows import (
    blob_ref,
    entry_payload,
    first_entries,
    insert_entry,
    kind_entries,
    require_body_blob,
    select_entries,
    select_entry,
)
from comal.ledger.history import FORKED_KIND, history
from comal.ledger.locks import (
    HOLDER_DEAD,
    LEASE_EXPIRED,
    Heartbeat,
    LockInfo,
    current_process,
    delete_lock,
    held_by,
    held_elsewhere,
    holder_alive,
    lease_ms,
    lock_payload,
    lost_lease,
    read_lock,
    renew_lease,
    same_host,
    write_lock,
)
from comal.ledger.pages import (
    PageIndex,
    ReadRange,
    build_page_index,
    stored_page_index,
    write_page_index,
)
from comal.ledger.records import Kind, Record
from comal.ledger.records.session import SessionMoved
from comal.ledger.salvage import SalvageReport, salvage
from comal.ledger.schema import connect as connect_sqlite
from comal.ledger.session_rows import (
    STATUSES,
    all_sessions,
    check_status,
    child_ids,
    fork_ids,
    insert_session,
    latest_session_id,
    one_line,
    require_session,
    resolve_prefix,
    select_session,
    session_id_to_create,
    short_ids,
)
from comal.ledger.verify import EntryRow, VerifyReport, entry_doubts
from comal.messages import JSONObject

__all__ = ["STATUSES", "Ledger"]

_APPEND_TRIES = 5
"""Attempts of one append across lost connections (each waits for the server to return)."""


class Ledger:
    """An open ledger. Use as a context manager, or call `close()`.

    Methods are synchronous and fast (one transaction each); a lock serialises callers from
    several threads of one process, and the engine's own locking serialises processes.
    """

    def __init__(self, engine: Engine, conn: Conn) -> None:
        """Wrap an open, migrated connection; use `Ledger.open` instead."""
        self._engine = engine
        self.location = engine.location
        """The ledger as messages name it: its file, or its URL without the password."""
        self._conn = conn
        self._mutex = threading.RLock()
        self._me = current_process()
        self._held: set[str] = set()
        self._closed = False
        self._cache = EntryCache()
        self._ranges_mutex = threading.Lock()
        self._lease_ms = lease_ms()
        self._heartbeat = Heartbeat(self._lease_ms / 3000, self.renew_leases)

    @property
    def path(self) -> Path:
        """The ledger's file (an SQLite ledger's only).

        Raises:
            LedgerError: the ledger is on a PostgreSQL server.
        """
        if isinstance(self._engine, SqliteEngine):
            return self._engine.path
        raise LedgerError(f"ledger {self.location} is on a server, not in a file")

    @property
    def engine(self) -> str:
        """`sqlite` or `postgresql`."""
        return self._engine.name

    # --- opening and closing ----------------------------------------------------------------

    @classmethod
    def open(cls, target: Path | str, *, durable: bool = True) -> Ledger:
        """Open (creating and migrating as needed) the ledger `target` names.

        Args:
            target: the database file (a path, or `sqlite:PATH`), or a `postgresql://` URL.
            durable: sync the WAL on every commit. `False` (synchronous=OFF) is only for bulk
                imports and benchmarks, where a machine crash may lose the latest entries.

        Raises:
            SchemaTooNewError: the ledger was written by a newer Comal (it is not modified).
            LedgerError: the file is not a Comal ledger or cannot be opened (or the server
                cannot be reached).
        """
        if is_pg_url(target):
            import comal.ledger.pg as pg  # psycopg is imported only where PostgreSQL is used

            return cls(pg.PgEngine(str(target)), pg.connect(str(target)))
        path = sqlite_path(target)
        conn = connect_sqlite(path, durable=durable)
        return cls(SqliteEngine(path), conn)

    def close(self) -> None:
        """Release the locks this ledger object took, and close the connection."""
        self._heartbeat.stop()
        with self._mutex:
            if self._closed:
                return
            try:
                for session_id in sorted(self._held):
                    self.release_lock(session_id)
            finally:
                self._closed = True
                self._cache.clear()
                self._conn.close()
                with self._ranges_mutex:
                    self._engine.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[Conn]:
        """One write transaction (IMMEDIATE on SQLite): committed when the block ends, rolled
        back on error."""
        with self._mutex, write_transaction(self._engine, self._conn) as conn:
            yield conn

    # --- sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        *,
        cwd: str,
        model: str = "",
        title: str = "",
        source: str = "comal",
        parent_id: str | None = None,
        session_id: str | None = None,
    ) -> str:
        """Record a new session and return its id.

        Args:
            cwd: the workspace the session works in.
            model: the model it talks to (may change later; this is the starting one).
            title: a short human title, kept as one line (`one_line`).
            source: `comal`, or `import:<format>` for imported sessions.
            parent_id: the coordinating session, for a child (sub-agent) session.
            session_id: a given UUID (importers keep the peer's id); default a new UUIDv7.

        Raises:
            UnknownSessionError: `parent_id` names no session.
            LedgerError: `session_id` is not a UUID or already exists.
        """
        session_id = session_id_to_create(session_id)
        created = now_ms()
        with self._write() as conn:
            if parent_id is not None:
                self._require_session(parent_id)
            if select_session(conn, session_id) is not None:
                raise LedgerError(f"session {session_id} already exists")
            insert_session(
                conn,
                session_id,
                parent_id=parent_id,
                cwd=cwd,
                model=model,
                title=one_line(title),
                source=source,
                created_at=created,
            )
        return session_id

    def _require_session(self, session_id: str) -> SessionInfo:
        return require_session(self._conn, session_id, self.location)

    def session(self, session_id: str) -> SessionInfo:
        """The session row with its entry count and last activity.

        Raises:
            UnknownSessionError: no such session.
        """
        with self._mutex:
            return self._require_session(session_id)

    def sessions(self) -> list[SessionInfo]:
        """Every session, newest first."""
        with self._mutex:
            return all_sessions(self._conn)

    def children(self, session_id: str) -> list[str]:
        """Ids of the sessions whose parent is `session_id`, oldest first."""
        with self._mutex:
            return child_ids(self._conn, session_id)

    def resolve(self, prefix: str) -> str:
        """The full session id that `prefix` (git-like, case-insensitive) uniquely starts.

        Raises:
            UnknownSessionError: no session starts with `prefix`.
            AmbiguousSessionError: several do; the message lists them.
        """
        with self._mutex:
            return resolve_prefix(self._conn, prefix, self.location)

    def short_ids(self) -> dict[str, str]:
        """Every session's short id (shortest unique start of its random tail, ≥ 8 chars)."""
        with self._mutex:
            return short_ids(self._conn)

    def short_id(self, session_id: str) -> str:
        """The short id of one session (the full id when the ledger does not hold it)."""
        return self.short_ids().get(session_id, session_id)

    def latest_session(self, cwd: str) -> str | None:
        """The top-level session in `cwd` with the most recent activity, if any."""
        with self._mutex:
            return latest_session_id(self._conn, cwd)

    def set_status(self, session_id: str, status: str) -> None:
        """Set the session's status (`active`, `finished`, `failed` or `interrupted`).

        Raises:
            LedgerError: unknown status.
            UnknownSessionError: no such session.
        """
        check_status(status)
        with self._write() as conn:
            self._require_session(session_id)
            conn.execute("UPDATE sessions SET status = ? WHERE id = ?", (status, session_id))

    def set_title(self, session_id: str, title: str) -> None:
        """Set the session's human title (kept as one line, `one_line`).

        Raises:
            UnknownSessionError: no such session.
        """
        with self._write() as conn:
            self._require_session(session_id)
            conn.execute(
                "UPDATE sessions SET title = ? WHERE id = ?", (one_line(title), session_id)
            )

    # --- entries and blobs ------------------------------------------------------------------

    def append(
        self, session_id: str, kind: str, payload: JSONObject, *, body: bytes | None = None
    ) -> Entry:
        """Append one entry in its own transaction and return it as stored.

        The ledger's own primitive, for any kind (one a newer Comal writes too): outside the
        ledger, Comal appends typed records only, through `append_record`
        (`tests/unit/ledger/test_record_union.py` holds it to that).

        Args:
            session_id: the session it belongs to.
            kind: dotted lowercase kind, e.g. `tool.result` (see docs/ledger.md).
            payload: a JSON object; stored as canonical JSON.
            body: exact bytes to keep as a blob; the payload then gains
                `"body": {"blob": "sha256:<hex>", "size_bytes": n}`.

        Raises:
            UnknownSessionError: no such session.
            LedgerError: bad kind, a payload that is not JSON, `body` given while the payload
                already has one, or a payload `body` naming a blob the ledger does not hold.
        """
        kind = str(kind)  # a `Kind` member is stored, and read back, as its plain string
        text, decoded, digest = entry_payload(kind, payload, body)
        entry_id = new_id("evt")
        for _ in range(_APPEND_TRIES - 1):
            try:
                return self._append(session_id, kind, text, decoded, body, digest, entry_id)
            except LedgerUnavailableError:
                # The connection was lost mid-transaction and is back: the append committed
                # or not. Its id (with its content hash) says which, so it commits once.
                with self._mutex:
                    stored = select_entry(self._conn, entry_id)
                if stored is not None:
                    if stored.content_hash != content_hash(kind, text):
                        raise LedgerError(
                            f"entry {entry_id} was stored with other content"
                        ) from None
                    return stored
        return self._append(session_id, kind, text, decoded, body, digest, entry_id)

    def _append(
        self,
        session_id: str,
        kind: str,
        text: str,
        decoded: JSONObject,
        body: bytes | None,
        digest: str | None,
        entry_id: str,
    ) -> Entry:
        ref = decoded.get("body")
        if body is None and kind != SessionMoved.KIND and (ref is None or blob_ref(ref)):
            row = EntryRow(0, entry_id, session_id, kind, text, content_hash(kind, text), now_ms())
            with self._mutex:
                holder = self._me if session_id in self._held else None
                done = self._engine.append_entry(self._conn, row, holder, blob_ref(ref))
            if done is not None:
                seq, created = done
                return Entry(seq, entry_id, session_id, kind, decoded, row.content_hash, created)
        with self._write() as conn:
            self._engine.before_append(conn, session_id)
            # Stamped under the write lock, so created_at never decreases along seq.
            created = now_ms()
            self._require_session(session_id)
            if session_id in self._held:
                self._check_held(conn, session_id)
            if body is not None:
                self._engine.insert_blob(conn, body, digest)
            else:
                require_body_blob(conn, decoded.get("body"))
            seq = insert_entry(conn, session_id, kind, text, entry_id, created)
            if kind == SessionMoved.KIND:
                # The row's cwd indexes where the session works (what `--continue` looks up):
                # the move updates it in the same transaction, so the two never disagree.
                moved = SessionMoved.from_payload(decoded)
                if moved.to is not None:
                    conn.execute("UPDATE sessions SET cwd = ? WHERE id = ?", (moved.to, session_id))
        return Entry(seq, entry_id, session_id, kind, decoded, content_hash(kind, text), created)

    def on_wait(self, notice: Callable[[str], None]) -> None:
        """Say waits on the ledger's server with `notice` (one line each: waiting, back)
        instead of on stderr; nothing on SQLite, which never waits so."""
        if hasattr(self._conn, "notify"):
            self._conn.notify = notice

    def append_record(self, session_id: str, record: Record, *, body: bytes | None = None) -> Entry:
        """Append `record` (its kind and payload) as `append` does: the one way Comal
        writes an entry."""
        return self.append(session_id, record.KIND, record.to_payload(), body=body)

    def put_blob(self, data: bytes) -> str:
        """Store `data` once (content-addressed) and return its digest `sha256:<hex>`."""
        with self._write() as conn:
            return self._engine.insert_blob(conn, bytes(data))

    def blob_size(self, digest: str) -> int:
        """Length in bytes of the blob stored under `digest`.

        Raises:
            LedgerError: no blob has that digest.
        """
        with self._mutex:
            size = blob_size(self._conn, digest)
        if size is None:
            raise LedgerError(f"no blob {digest} in {self.location}")
        return size

    def blob(self, digest: str) -> bytes:
        """The exact bytes stored under `digest`.

        Raises:
            LedgerError: no blob has that digest.
        """
        with self._mutex:
            data = self._engine.read_blob(self._conn, digest)
        if data is None:
            raise LedgerError(f"no blob {digest} in {self.location}")
        return data

    @contextmanager
    def blob_ranges(self, digest: str) -> Iterator[ReadRange]:
        """`read(start, end)`: byte ranges of one blob, for the block's duration.

        On SQLite ranges are read through a second, query-only connection that maps the file
        (`SqliteEngine.blob_ranges`); on PostgreSQL each read fetches only the chunks it spans.

        Raises:
            LedgerError: no blob has that digest.
        """
        if self._closed:
            raise LedgerError(f"ledger {self.location} is closed")
        with self._ranges_mutex:
            try:
                with self._engine.blob_ranges(self._conn, digest) as read:
                    if read is None:
                        raise LedgerError(f"no blob {digest} in {self.location}")
                    yield read
            except self._engine.errors as exc:
                raise LedgerError(f"cannot read blob {digest} in {self.location}: {exc}") from exc

    def page_index(self, digest: str) -> PageIndex:
        """The page index of one blob (`ledger/pages.py`): the stored one when it checks, else
        one rebuilt from the blob's bytes (read a piece at a time) and stored for next time.

        Storing is best effort: a ledger that cannot be written (a full disk, another writer
        holding it too long) still gets the rebuilt index, for this call.

        Raises:
            LedgerError: no blob has that digest.
        """
        size = self.blob_size(digest)
        with self._mutex:
            found = stored_page_index(self._conn, digest, size)
        if found is not None:
            return found
        with self.blob_ranges(digest) as read:
            built = build_page_index(size, read)
        try:
            with self._write() as conn:
                write_page_index(conn, digest, built)
        except LedgerError:
            pass
        return built

    def body(self, entry: Entry) -> bytes | None:
        """The bytes of the entry's `body` blob, or None when it has none."""
        digest = entry.body_hash
        return None if digest is None else self.blob(digest)

    def entries(
        self,
        session_id: str,
        *,
        after_seq: int = 0,
        kinds: Collection[str] | None = None,
        own: bool = False,
        rewound: bool = False,
    ) -> list[Entry]:
        """The session's history with `seq > after_seq`, in seq order, optionally of some kinds.

        The history of a fork starts with its parent's entries through the fork point, and a
        conversation rewind leaves out what it went back over (`ledger/history.py`); `own`
        gives the entries this session itself appended, all of them; `rewound` keeps what
        conversation rewinds went back over.

        Entries read before are served from memory (`entry_cache`): only newer rows are read.

        Raises:
            UnknownSessionError: no such session.
        """
        if kinds is not None and not kinds:
            return []  # asked for no kind: nothing to read, not even the session
        with self._mutex:
            if kinds is not None or self._conn.in_transaction:
                self._require_session(session_id)
                if own:
                    return select_entries(self._conn, session_id, after_seq, kinds)
                return history(self._conn, session_id, after_seq, kinds, rewound=rewound)
            version = self._engine.data_version(self._conn)
            cached = self._cache.session(version, session_id, self._reader(session_id))
            if own or cached.history_is_own(rewound=rewound):
                return cached.after(after_seq)
            return history(self._conn, session_id, after_seq, None, rewound=rewound)

    def _reader(self, session_id: str) -> Callable[[int], tuple[list[Entry], bool]]:
        """Reads the session's own entries after a seq, and whether it is a fork."""

        def read(after_seq: int) -> tuple[list[Entry], bool]:
            info = self._require_session(session_id)
            own = select_entries(self._conn, session_id, after_seq, None)
            return own, info.fork_of is not None

        return read

    def fork_session(self, parent_id: str, *, through_seq: int, title: str = "") -> str:
        """Record a fork of `parent_id` whose history is the parent's through `through_seq`.

        The new session has the parent's workspace and model; its first own entry is
        `session.forked` {`parent`, `through_seq`, `through_entry`}. Nothing is copied.

        Raises:
            UnknownSessionError: no such parent.
            LedgerError: `through_seq` is not one of the parent's history entries.
        """
        with self._mutex:
            parent = self._require_session(parent_id)
            point = [e for e in history(self._conn, parent_id) if e.seq == through_seq]
        if not point:
            raise LedgerError(f"seq {through_seq} is not an entry of session {parent_id}")
        session_id = session_id_to_create(None)
        created = now_ms()
        payload: JSONObject = {
            "parent": parent_id,
            "through_seq": through_seq,
            "through_entry": point[0].id,
        }
        with self._write() as conn:
            insert_session(
                conn,
                session_id,
                parent_id=None,
                cwd=parent.cwd,
                model=parent.model,
                title=title or parent.title,
                source="comal",
                created_at=created,
                fork_of=parent_id,
                fork_seq=through_seq,
            )
            insert_entry(conn, session_id, FORKED_KIND, encode_payload(payload)[0])
        return session_id

    def forks(self, session_id: str) -> list[str]:
        """Ids of the sessions forked from `session_id`, oldest first."""
        with self._mutex:
            return fork_ids(self._conn, session_id)

    def first_entries(self, kind: str) -> dict[str, Entry]:
        """Each session's first entry of `kind`, by session id (e.g. every first ask)."""
        with self._mutex:
            return first_entries(self._conn, kind)

    def kind_entries(self, kinds: Collection[str]) -> list[Entry]:
        """Every session's entries of `kinds`, in seq order."""
        with self._mutex:
            return kind_entries(self._conn, kinds)

    def wait_for_change(self, timeout_s: float) -> None:
        """Return when another process may have appended (PostgreSQL: a notification; SQLite:
        after a short poll interval), or after `timeout_s`."""
        self._engine.wait_for_change(timeout_s)

    def entry(self, entry_id: str) -> Entry:
        """One entry by its `evt_` id.

        Raises:
            UnknownEntryError: no entry has that id.
        """
        with self._mutex:
            found = select_entry(self._conn, entry_id)
        if found is None:
            raise UnknownEntryError(f"no entry {entry_id!r} in {self.location}")
        return found

    def verify(self, session_id: str | None = None) -> VerifyReport:
        """Re-hash the entries of one session (or of the whole ledger) and their blobs.

        Raises:
            UnknownSessionError: `session_id` names no session.
        """
        with self._mutex:
            if session_id is not None:
                self._require_session(session_id)
            return self._engine.verify(self._conn, session_id)

    def doubts(self, entries: Collection[Entry]) -> list[tuple[str, str]]:
        """(entry id, problem) for each of `entries` whose stored row no longer hashes to its
        content hash, and for entries of no recorded session (see `verify.entry_doubts`)."""
        with self._mutex:
            if not isinstance(self._conn, sqlite3.Connection):
                # A PostgreSQL server keeps its own pages whole; entries are re-hashed by
                # `verify` there, not before each resume.
                return []
            return entry_doubts(self._conn, sorted(e.seq for e in entries))

    def salvage_from(self, source: Path | str) -> SalvageReport:
        """Copy every intact entry of the ledger `source` (a file, maybe damaged, or a
        PostgreSQL URL) into this one.

        Raises:
            LedgerError: this ledger already holds sessions, or `source` cannot be opened.
        """
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone() is not None:
                raise LedgerError(
                    f"{self.location} already holds sessions; salvage into a new ledger"
                )
            return salvage(source, conn, self._engine.insert_blob)

    def migrate_to(self, target: Ledger) -> CopyReport:
        """Copy every session, entry and blob of this ledger into `target` (another engine,
        say), one transaction per session, skipping the sessions an earlier run copied whole
        (`ledger/copy.py`).

        Raises:
            LedgerError: `target` holds sessions that are not an earlier copy of this ledger.
        """
        with self._mutex:
            sessions = all_sessions(self._conn)
        skip = check_target(sessions, target.sessions())
        copied = entries = blobs = 0
        engine = target._engine
        for info in ordered(sessions):
            if info.id in skip:
                continue
            with self._mutex:
                rows = entry_rows(self._conn, info.id)
            with target._write() as conn:
                blobs += copy_session(
                    conn,
                    info,
                    rows,
                    self._blob_or_none,
                    engine.insert_blob,
                    engine.insert_copied_entry,
                    has_blob,
                )
                engine.after_copy(conn)
            copied += 1
            entries += len(rows)
        with self._mutex:
            digests = list(all_blobs(self._conn))
        for digest in digests:
            with target._write() as conn:
                if not has_blob(conn, digest):
                    engine.insert_blob(conn, self.blob(digest), digest)
                    blobs += 1
        return CopyReport(copied, len(skip), entries, blobs)

    def _blob_or_none(self, digest: str) -> bytes | None:
        with self._mutex:
            return self._engine.read_blob(self._conn, digest)

    def fingerprint(self) -> tuple[int, int, str]:
        """(entries, blobs, digest of every entry's seq, id and content hash): two ledgers
        holding the same entries have the same fingerprint, whatever their engines."""
        with self._mutex:
            return fingerprint(self._conn)

    # --- locks ------------------------------------------------------------------------------

    def acquire_lock(self, session_id: str) -> LockInfo:
        """Hold the session for this process.

        Appends `lock.acquired`, or `lock.reclaimed` (with the `previous` holder and the
        `reason`) when the recorded holder's process is dead (this host) or its lease expired
        (another host). The lease is then renewed by a heartbeat until `release_lock` or
        `close`. Re-acquiring a lock this process holds is a no-op.

        Raises:
            SessionLockedError: a live process or an unexpired lease (named in the message)
                holds it.
            UnknownSessionError: no such session.
        """
        me = self._me
        with self._write() as conn:
            self._engine.before_append(conn, session_id)  # one lock operation at a time
            self._require_session(session_id)
            now = self._engine.clock_ms(conn)
            current = read_lock(conn, session_id)
            if current is not None and held_by(current, me):
                self._held.add(session_id)
                return current
            if current is not None and holder_alive(current, me, now):
                raise held_elsewhere(current, me)
            lock = LockInfo(
                session_id,
                me.pid,
                me.host,
                me.start_id,
                me.started_at,
                now_ms(),
                me.host_id,
                now + self._lease_ms,
            )
            write_lock(conn, lock)
            payload = lock_payload(lock)
            kind = Kind.LOCK_ACQUIRED
            if current is not None:
                kind = Kind.LOCK_RECLAIMED
                previous = lock_payload(current)
                if current.expires_at:
                    previous["expires_at"] = current.expires_at
                payload["previous"] = previous
                payload["reason"] = HOLDER_DEAD if same_host(current, me) else LEASE_EXPIRED
            insert_entry(conn, session_id, kind, encode_payload(payload)[0])
        self._held.add(session_id)
        self._heartbeat.start()
        return lock

    def release_lock(self, session_id: str) -> None:
        """Release the session if this process holds it; otherwise do nothing."""
        me = self._me
        with self._write() as conn:
            delete_lock(conn, session_id, me)
        self._held.discard(session_id)

    def lock_holder(self, session_id: str) -> LockInfo | None:
        """The process holding the session, or None: a dead holder's lock (on this host) or an
        expired lease (a holder on another host) counts as free."""
        with self._mutex:
            current = read_lock(self._conn, session_id)
            now = self._engine.clock_ms(self._conn)
        if current is None or not holder_alive(current, self._me, now):
            return None
        return current

    def renew_leases(self) -> list[str]:
        """Push back the lease of every session this ledger holds (the heartbeat does, every
        third of the lease); returns the sessions whose lease another process took over
        (their next append raises). A ledger that cannot be written now is tried next time."""
        lost: list[str] = []
        for session_id in sorted(self._held):
            try:
                with self._write() as conn:
                    until = self._engine.clock_ms(conn) + self._lease_ms
                    kept = renew_lease(conn, session_id, self._me, until)
            except LedgerError:
                continue
            if not kept:
                lost.append(session_id)
        return lost

    def _check_held(self, conn: Conn, session_id: str) -> None:
        """Inside an append by this lease's holder: refuse it when the lease was taken over."""
        current = read_lock(conn, session_id)
        if current is None or not held_by(current, self._me):
            self._held.discard(session_id)
            raise lost_lease(current, session_id)
