"""Ledger schema and connection: DDL as named migrations, the version gate, the pragmas.

Invariants:
- Migrations are named functions (`m001_initial`, …) applied in list order, each recorded in
  the `migrations` table; `PRAGMA user_version` mirrors the number applied. Never edit or
  rename a migration once released: append a new one.
- `entries` and `blobs` are append-only: triggers abort every UPDATE and DELETE. Only the
  `sessions` row (status, title, derived counters), the `locks` table and the derived page
  index of large blobs (`blob_pages`) change.
- A ledger whose recorded schema is newer than `SCHEMA_VERSION` is inspected through a
  read-only connection and refused before anything can write to it.
- Every connection runs WAL, `synchronous=FULL` (OFF only when asked for bulk work), foreign
  keys and recursive triggers, in autocommit mode: callers open transactions explicitly.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from comal.errors import LedgerError, SchemaTooNewError
from comal.ids import now_ms


def m001_initial(conn: sqlite3.Connection) -> None:
    """Sessions, entries, blobs and locks, with the append-only triggers."""
    conn.execute(
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            parent_id TEXT REFERENCES sessions(id),
            cwd TEXT NOT NULL,
            model TEXT NOT NULL,
            title TEXT NOT NULL,
            source TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('active', 'finished', 'failed', 'interrupted')),
            created_at INTEGER NOT NULL,
            entry_count INTEGER NOT NULL DEFAULT 0,
            last_activity_at INTEGER NOT NULL,
            last_seq INTEGER NOT NULL DEFAULT 0
        ) STRICT
        """
    )
    conn.execute("CREATE INDEX sessions_by_parent ON sessions(parent_id)")
    conn.execute("CREATE INDEX sessions_by_cwd ON sessions(cwd, last_activity_at, last_seq)")
    conn.execute(
        """
        CREATE TABLE entries (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT
        """
    )
    conn.execute("CREATE INDEX entries_by_session ON entries(session_id, seq)")
    conn.execute(
        """
        CREATE TABLE blobs (
            hash TEXT PRIMARY KEY,
            size_bytes INTEGER NOT NULL,
            data BLOB NOT NULL
        ) STRICT
        """
    )
    conn.execute(
        """
        CREATE TABLE locks (
            session_id TEXT PRIMARY KEY REFERENCES sessions(id),
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            process_start_id TEXT NOT NULL,
            process_started_at INTEGER NOT NULL,
            acquired_at INTEGER NOT NULL
        ) STRICT
        """
    )
    for table in ("entries", "blobs"):
        for action in ("UPDATE", "DELETE"):
            conn.execute(
                f"""
                CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table}
                BEGIN SELECT RAISE(ABORT, 'ledger {table} are append-only'); END
                """
            )
    # The session's counters live on its row so `comal sessions` need not scan every entry;
    # the trigger runs inside the append's own transaction, so they can never drift.
    # `last_seq` orders sessions whose last activity falls in the same millisecond.
    conn.execute(
        """
        CREATE TRIGGER entries_count AFTER INSERT ON entries
        BEGIN
            UPDATE sessions
               SET entry_count = entry_count + 1, last_activity_at = NEW.created_at,
                   last_seq = NEW.seq
             WHERE id = NEW.session_id;
        END
        """
    )


def m002_forks(conn: sqlite3.Connection) -> None:
    """Fork links on the session row, and an index to find a session's entries of one kind.

    A fork's history is its parent's entries through `fork_seq` followed by its own: the link
    is read on every `entries()` call, so it lives on the row rather than in an entry. The
    kind index keeps the lookup of rewinds (`session.rewound`) cheap on long sessions.
    """
    conn.execute("ALTER TABLE sessions ADD COLUMN fork_of TEXT REFERENCES sessions(id)")
    conn.execute("ALTER TABLE sessions ADD COLUMN fork_seq INTEGER")
    conn.execute("CREATE INDEX entries_by_kind ON entries(session_id, kind, seq)")


def m003_page_index(conn: sqlite3.Connection) -> None:
    """The page index of large blobs (`ledger/pages.py`), so a page decodes only its bytes.

    Derived data, unlike `entries` and `blobs`: a row that does not check is replaced by one
    rebuilt from its blob, so it carries a checksum and no append-only trigger. Blobs stored
    before this migration get their row the first time they are paged.
    """
    conn.execute(
        """
        CREATE TABLE blob_pages (
            hash TEXT PRIMARY KEY REFERENCES blobs(hash),
            format INTEGER NOT NULL,
            utf8 INTEGER NOT NULL,
            points BLOB NOT NULL,
            checksum TEXT NOT NULL
        ) STRICT
        """
    )


def m004_leases(conn: sqlite3.Connection) -> None:
    """Session locks as leases (`ledger/locks.py`): the holder's host id, and until when its
    lease holds unless renewed by a heartbeat. Rows of older holders read `''` and 0: judged
    as before, by pid on this host."""
    conn.execute("ALTER TABLE locks ADD COLUMN host_id TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE locks ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0")


Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: tuple[Migration, ...] = (m001_initial, m002_forks, m003_page_index, m004_leases)
"""Every migration, in the order it must run."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema this Comal writes; a ledger recording a higher one is refused."""

_KNOWN_NAMES = frozenset(m.__name__ for m in MIGRATIONS)
_WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def check_version(conn: sqlite3.Connection, path: Path, *, probe: bool = False) -> None:
    """Raise unless this Comal may write the ledger behind `conn` (which may be read-only).

    With `probe` (a read-only look before any write), a ledger that has its `migrations`
    table but shows no applied migration is not refused: after a writer was killed, a
    read-only connection cannot recover the WAL index and may see an inconsistent snapshot.
    The authoritative check runs again under the write lock in `migrate`, where SQLite
    recovers the WAL first.
    """
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    applied: set[str] = set()
    if _has_table(conn, "migrations"):
        names = [row[0] for row in conn.execute("SELECT name FROM migrations")]
        if not all(isinstance(name, str) for name in names):
            # Only damage makes a migration's name read as something else (NULL, a number).
            raise LedgerError(
                f"{path} has a damaged migrations table (a migration name that is not text);"
                " it was left untouched"
            )
        applied = set(names)
    unknown = sorted(applied - _KNOWN_NAMES)
    if version > SCHEMA_VERSION or unknown:
        detail = f", unknown migrations {', '.join(unknown)}" if unknown else ""
        raise SchemaTooNewError(
            f"{path} was written by a newer Comal (schema {version}{detail}; this Comal knows"
            f" schema {SCHEMA_VERSION}); upgrade Comal to use it — it was left untouched"
        )
    if not applied:
        if probe and _has_table(conn, "migrations"):
            return
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        if tables:
            raise LedgerError(
                f"{path} is an SQLite database but not a Comal ledger"
                f" (tables: {', '.join(tables[:8])}); it was left untouched"
            )


def _unwritable(path: Path) -> str | None:
    """Why the ledger's directory cannot be written, if it cannot (read-only mount, mode)."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return f"{folder} is on a read-only file system"
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return f"{folder} is not writable by this user"
    return None


def _open_failure(path: Path, exc: BaseException, fallback: str) -> LedgerError:
    """The error for a ledger that cannot be opened, naming a read-only directory first."""
    reason = _unwritable(path)
    if reason is not None:
        return LedgerError(
            f"cannot open ledger {path}: {reason} (SQLite needs to write beside the ledger even"
            f" to read it: {exc}); set COMAL_HOME to a writable directory"
        )
    return LedgerError(f"{fallback}: {exc}")


def check_readable(path: Path) -> None:
    """Refuse, without writing a byte, a file that is not a ledger this Comal may write.

    Raises:
        SchemaTooNewError: the ledger records a newer schema.
        LedgerError: the file is not an SQLite database or not a Comal ledger.
    """
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise _open_failure(path, exc, f"cannot open ledger {path}") from exc
    try:
        # One read transaction: its statements see one snapshot. Without it, a ledger another
        # process is creating could show no `migrations` table to the first and every table
        # to the last, and be refused as another program's database.
        conn.execute("BEGIN")
        check_version(conn, path, probe=True)
    except sqlite3.DatabaseError as exc:
        raise _open_failure(path, exc, f"{path} is not a Comal ledger") from exc
    finally:
        conn.close()


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Apply every missing migration in one IMMEDIATE transaction.

    The version is checked again under the write lock: another process may have upgraded the
    ledger between `check_readable` and now.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        check_version(conn, path)
        if not _has_table(conn, "migrations"):
            conn.execute(
                "CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
                " STRICT"
            )
        applied = {row[0] for row in conn.execute("SELECT name FROM migrations")}
        for migration in MIGRATIONS:
            if migration.__name__ not in applied:
                migration(conn)
                conn.execute(
                    "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                    (migration.__name__, now_ms()),
                )
        # Written only when it changes: an up-to-date ledger opens without writing a byte, so
        # reading still works on a full disk.
        if int(conn.execute("PRAGMA user_version").fetchone()[0]) != SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _create_file(path: Path) -> None:
    """Create the database file 0600 (and its directory 0700) if it does not exist.

    SQLite gives the WAL and SHM files the main file's mode, so they are 0600 too.
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise _open_failure(path, exc, f"cannot create ledger {path}") from exc
    os.close(fd)


def _wal(conn: sqlite3.Connection, patience_s: float = 30.0) -> None:
    """Put the ledger in WAL mode, waiting out another process doing the same.

    Switching a fresh file to WAL upgrades a shared lock, and SQLite answers "database is
    locked" at once rather than call the busy handler (two waiting upgrades would deadlock):
    two Comal processes opening a new ledger together meet exactly that.
    """
    deadline = time.monotonic() + patience_s
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def connect(path: Path, *, durable: bool) -> sqlite3.Connection:
    """An autocommit connection to a checked, created and migrated ledger file.

    Raises:
        SchemaTooNewError: the ledger records a newer schema (it is not modified).
        LedgerError: the file is not a Comal ledger or cannot be opened or created.
    """
    if path.exists() and path.stat().st_size > 0:
        check_readable(path)
    _create_file(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise _open_failure(path, exc, f"cannot open ledger {path}") from exc
    try:
        _wal(conn)
        conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'OFF'}")
        conn.execute("PRAGMA foreign_keys = ON")
        # REPLACE conflict resolution deletes rows; with recursive triggers on, the
        # append-only DELETE triggers fire for it too.
        conn.execute("PRAGMA recursive_triggers = ON")
        # A 50 MB output grows the WAL by 50 MB; let it shrink back once checkpointed.
        conn.execute(f"PRAGMA journal_size_limit = {_WAL_SIZE_LIMIT_BYTES}")
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise _open_failure(path, exc, f"{path} is not a usable Comal ledger") from exc
    except BaseException:
        conn.close()
        raise
    return conn
