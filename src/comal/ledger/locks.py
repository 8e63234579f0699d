"""Session locks: who holds a session, whether that holder still lives, and the lock rows.

A holder is (pid, host, process start). The start is read from `/proc/<pid>/stat` (clock ticks
since boot) together with the boot id, so a pid recycled by another process — or by a reboot —
is never mistaken for the holder. Where `/proc` is missing the start id is empty and liveness
falls back to `kill(pid, 0)`.

Invariants: a holder on another host is always presumed alive (its liveness cannot be checked
from here); a zombie counts as dead, since it can no longer write.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from comal.errors import SessionLockedError
from comal.ledger.conn import Conn
from comal.messages import JSONObject

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class LockInfo:
    """The process holding a session.

    Attributes:
        session_id: the locked session.
        pid: process id of the holder.
        host: host name of the holder.
        process_start_id: exact identity of the process start (`<boot id>:<clock ticks>`),
            empty where the platform does not expose it.
        process_started_at: when the holder started, ms UTC (approximate; for display).
        acquired_at: when the lock was taken, ms UTC.
    """

    session_id: str
    pid: int
    host: str
    process_start_id: str
    process_started_at: int
    acquired_at: int


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """The identity fields of one running process."""

    pid: int
    host: str
    start_id: str
    started_at: int


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of `/proc/<pid>/stat` after the command name (field 3 onwards)."""
    raw = _read(_PROC / str(pid) / "stat")
    if raw is None:
        return None
    # The command name is parenthesised and may itself contain spaces or parentheses.
    return raw[raw.rfind(")") + 2 :].split()


def _boot() -> tuple[str, float]:
    boot_id = (_read(_PROC / "sys/kernel/random/boot_id") or "").strip()
    boot_time = 0.0
    for line in (_read(_PROC / "stat") or "").splitlines():
        if line.startswith("btime "):
            boot_time = float(line.split()[1])
    return boot_id, boot_time


def _start(pid: int) -> tuple[str, int] | None:
    """(start id, started_at ms) of a live, non-zombie process; None when it is gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    state, ticks = fields[0], int(fields[19])
    if state in ("Z", "X", "x"):
        return None
    boot_id, boot_time = _boot()
    hertz = os.sysconf("SC_CLK_TCK")
    return f"{boot_id}:{ticks}", int((boot_time + ticks / hertz) * 1000)


def current_process() -> ProcessIdentity:
    """The identity of this process."""
    pid = os.getpid()
    start = _start(pid) if _PROC.is_dir() else None
    start_id, started_at = start if start is not None else ("", 0)
    return ProcessIdentity(pid, socket.gethostname(), start_id, started_at)


def holder_alive(lock: LockInfo, me: ProcessIdentity) -> bool:
    """Whether the process recorded in `lock` still runs (it may be this very process)."""
    if lock.host != me.host:
        return True
    if _PROC.is_dir():
        start = _start(lock.pid)
        if start is None:
            return False
        # An empty recorded start id came from a platform without /proc: trust the pid alone.
        return not lock.process_start_id or start[0] == lock.process_start_id
    try:
        os.kill(lock.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def held_by(lock: LockInfo, me: ProcessIdentity) -> bool:
    """Whether `lock` belongs to the process `me`."""
    return (lock.pid, lock.host, lock.process_start_id) == (me.pid, me.host, me.start_id)


def held_elsewhere(lock: LockInfo) -> SessionLockedError:
    """The error for a session that the live process recorded in `lock` holds."""
    since = datetime.fromtimestamp(lock.acquired_at / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return SessionLockedError(
        f"session {lock.session_id} is held by pid {lock.pid} on {lock.host}"
        f" since {since}; stop that process first"
    )


def lock_payload(lock: LockInfo) -> JSONObject:
    """The identity fields a `lock.*` entry records."""
    return {
        "pid": lock.pid,
        "host": lock.host,
        "process_started_at": lock.process_started_at,
        "process_start_id": lock.process_start_id,
    }


def read_lock(conn: Conn, session_id: str) -> LockInfo | None:
    """The recorded holder of a session (alive or not), or None."""
    row = conn.execute(
        "SELECT session_id, pid, host, process_start_id, process_started_at, acquired_at"
        " FROM locks WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return None if row is None else LockInfo(*row)


def write_lock(conn: Conn, lock: LockInfo) -> None:
    """Record `lock` as the session's holder, replacing any previous one (caller's transaction)."""
    conn.execute("DELETE FROM locks WHERE session_id = ?", (lock.session_id,))
    conn.execute(
        "INSERT INTO locks (session_id, pid, host, process_start_id, process_started_at,"
        " acquired_at) VALUES (?, ?, ?, ?, ?, ?)",
        (
            lock.session_id,
            lock.pid,
            lock.host,
            lock.process_start_id,
            lock.process_started_at,
            lock.acquired_at,
        ),
    )


def delete_lock(conn: Conn, session_id: str, me: ProcessIdentity) -> None:
    """Remove the session's lock if `me` holds it (caller's transaction)."""
    conn.execute(
        "DELETE FROM locks WHERE session_id = ? AND pid = ? AND host = ? AND process_start_id = ?",
        (session_id, me.pid, me.host, me.start_id),
    )
