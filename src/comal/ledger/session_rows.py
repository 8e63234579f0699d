"""The `sessions` table: the SQL behind the `Ledger`'s session methods.

Every function runs inside the caller's transaction or read (the `Ledger` serialises them);
none commits. Rows come back as `SessionInfo` values, newest first where a list is ordered by
time. Session ids are lowercase UUIDs, so a prefix lookup is a range scan on the primary key.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from comal.errors import AmbiguousSessionError, LedgerError, UnknownSessionError
from comal.ids import SHORT_ID_MIN_CHARS, new_session_id, session_tail, shortest_unique
from comal.ledger.conn import Conn
from comal.ledger.entry import SessionInfo

STATUSES = ("active", "finished", "failed", "interrupted")
"""The statuses a session can have."""
SESSION_COLUMNS = (
    "id, parent_id, created_at, cwd, model, status, title, source, entry_count, last_activity_at,"
    " fork_of, fork_seq"
)
CANDIDATES_SHOWN = 10
"""Sessions an ambiguous prefix lists at most."""


def one_line(title: str) -> str:
    """A session title as stored: its words on one line (a first ask or an imported sub-agent's
    prompt may span lines; listings and `/state` show one line per session)."""
    return " ".join(title.split())


def session_id_to_create(given: str | None) -> str:
    """The id of a session about to be created: `given` in canonical form, else a new UUIDv7.

    Raises:
        LedgerError: `given` is not a UUID.
    """
    if given is None:
        return new_session_id()
    try:
        return str(uuid.UUID(given))
    except ValueError as exc:
        raise LedgerError(f"session id must be a UUID, got {given!r}") from exc


def check_status(status: str) -> None:
    """Refuse a status outside `STATUSES`.

    Raises:
        LedgerError: unknown status.
    """
    if status not in STATUSES:
        raise LedgerError(f"unknown session status {status!r}; one of {', '.join(STATUSES)}")


def session_from_row(
    row: tuple[str, str | None, int, str, str, str, str, str, int, int, str | None, int | None],
) -> SessionInfo:
    """The value of one `SESSION_COLUMNS` row."""
    return SessionInfo(*row)


def select_session(conn: Conn, session_id: str) -> SessionInfo | None:
    """The session row, or None."""
    row = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return None if row is None else session_from_row(row)


def require_session(conn: Conn, session_id: str, where: Path | str) -> SessionInfo:
    """The session row.

    Raises:
        UnknownSessionError: no such session in the ledger at `where`.
    """
    info = select_session(conn, session_id)
    if info is None:
        raise UnknownSessionError(f"no session {session_id!r} in {where}")
    return info


def insert_session(
    conn: Conn,
    session_id: str,
    *,
    parent_id: str | None,
    cwd: str,
    model: str,
    title: str,
    source: str,
    created_at: int,
    fork_of: str | None = None,
    fork_seq: int | None = None,
) -> None:
    """Insert an `active` session whose last activity is its creation."""
    conn.execute(
        "INSERT INTO sessions (id, parent_id, cwd, model, title, source, status,"
        " created_at, last_activity_at, fork_of, fork_seq)"
        " VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)",
        (
            session_id,
            parent_id,
            cwd,
            model,
            title,
            source,
            created_at,
            created_at,
            fork_of,
            fork_seq,
        ),
    )


def all_sessions(conn: Conn) -> list[SessionInfo]:
    """Every session, newest first."""
    rows = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at DESC, rowid DESC"
    ).fetchall()
    return [session_from_row(row) for row in rows]


def child_ids(conn: Conn, session_id: str) -> list[str]:
    """Ids of the sessions whose parent is `session_id`, oldest first."""
    rows = conn.execute(
        "SELECT id FROM sessions WHERE parent_id = ? ORDER BY created_at, rowid", (session_id,)
    ).fetchall()
    return [row[0] for row in rows]


def fork_ids(conn: Conn, session_id: str) -> list[str]:
    """Ids of the sessions forked from `session_id`, oldest first."""
    rows = conn.execute(
        "SELECT id FROM sessions WHERE fork_of = ? ORDER BY created_at, rowid", (session_id,)
    ).fetchall()
    return [str(row[0]) for row in rows]


def short_ids(conn: Conn) -> dict[str, str]:
    """Every session's short id: its random tail's shortest unique prefix (≥ 8 characters)."""
    ids = [str(row[0]) for row in conn.execute("SELECT id FROM sessions")]
    lengths = shortest_unique([session_tail(i) for i in ids])
    return {i: session_tail(i)[: lengths[session_tail(i)]] for i in ids}


def resolve_prefix(conn: Conn, prefix: str, where: Path | str) -> str:
    """The full session id that `prefix` uniquely names (case-insensitive).

    `prefix` is the start of a full id (git-like) or of a short id (the start of the id's
    random tail, as `comal sessions` shows it); a full id always wins.

    Raises:
        UnknownSessionError: no session matches `prefix`.
        AmbiguousSessionError: several do; the message lists them.
    """
    wanted = prefix.strip().lower()
    if not wanted or any(c not in "0123456789abcdef-" for c in wanted):
        raise UnknownSessionError(f"{prefix!r} is not a session id or id prefix")
    # A range scan on the primary key: ids are lowercase hex and dashes.
    rows = conn.execute(
        "SELECT id, created_at, cwd FROM sessions WHERE id >= ? AND id < ?"
        " ORDER BY created_at DESC LIMIT ?",
        (wanted, wanted + "\x7f", CANDIDATES_SHOWN + 1),
    ).fetchall()
    exact = [row for row in rows if row[0] == wanted]
    if exact:
        return str(exact[0][0])
    short: list[tuple[str, int, str]] = []
    if "-" not in wanted:
        # Short ids: the start of the last group (characters 25-36 of the canonical text).
        short = conn.execute(
            "SELECT id, created_at, cwd FROM sessions WHERE substr(id, 25, ?) = ?"
            " ORDER BY created_at DESC LIMIT ?",
            (len(wanted), wanted, CANDIDATES_SHOWN + 1),
        ).fetchall()
    # A short id as shown (≥ 8 characters) names its session even when it also happens to
    # start some other full id; below that length a unique full-id prefix is tried first.
    if len(short) == 1 and len(wanted) >= SHORT_ID_MIN_CHARS:
        return str(short[0][0])
    if len(rows) == 1 and not short:
        return str(rows[0][0])
    if len(short) == 1 and not rows:
        return str(short[0][0])
    seen = {row[0] for row in rows}
    rows += [row for row in short if row[0] not in seen]
    if not rows:
        raise UnknownSessionError(f"no session id or short id starts with {prefix!r} in {where}")
    listed = "\n".join(f"  {row[0]}  {row[2]}" for row in rows[:CANDIDATES_SHOWN])
    more = "\n  …" if len(rows) > CANDIDATES_SHOWN else ""
    raise AmbiguousSessionError(
        f"{prefix!r} matches several sessions; give more characters:\n{listed}{more}"
    )


def latest_session_id(conn: Conn, cwd: str) -> str | None:
    """The top-level session in `cwd` with the most recent activity, if any."""
    row = conn.execute(
        "SELECT id FROM sessions WHERE cwd = ? AND parent_id IS NULL"
        " ORDER BY last_activity_at DESC, last_seq DESC, rowid DESC LIMIT 1",
        (cwd,),
    ).fetchone()
    return None if row is None else str(row[0])
