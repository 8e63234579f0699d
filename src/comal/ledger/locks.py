"""Session locks as leases: who holds a session, whether that holder still counts, the rows.

A holder is (pid, host, process start) on a host id (`COMAL_HOST_ID`, else the machine id,
else the host name). The start is read from `/proc/<pid>/stat` (clock ticks since boot)
together with the boot id, so a pid recycled by another process — or by a reboot — is never
mistaken for the holder. Where `/proc` is missing the start id is empty and liveness falls back
to `kill(pid, 0)`.

A lock is a lease: it holds until `expires_at` (ms, on the ledger's clock: the server's for
PostgreSQL, so hosts' clocks need not agree), and its holder's heartbeat pushes that back every
third of `lease_ms()` (`Ledger`). A holder on this host is judged by its process, exactly; a
holder on another host by its lease alone: alive until the lease expires unrenewed.

Invariants: a zombie counts as dead, since it can no longer write; a row an older Comal wrote
(no host id, no expiry) on another host is presumed alive, as before; a holder whose lease was
taken over stops writing (the `Ledger` checks its row inside every append to the session).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from comal.errors import SessionLockedError
from comal.ledger.conn import Conn
from comal.messages import JSONObject

_PROC = Path("/proc")
_DEFAULT_LEASE_S = 30.0
HOLDER_DEAD = "holder_dead"
LEASE_EXPIRED = "lease_expired"
"""The reasons a `lock.reclaimed` records."""


def lease_ms() -> int:
    """How long a lease holds without a heartbeat (`COMAL_LEASE_S`, default 30 s)."""
    raw = os.environ.get("COMAL_LEASE_S", "")
    try:
        seconds = float(raw) if raw else _DEFAULT_LEASE_S
    except ValueError:
        seconds = _DEFAULT_LEASE_S
    return max(100, int(seconds * 1000))


def host_id() -> str:
    """This machine's identity for leases: `COMAL_HOST_ID`, else its machine id, else its name."""
    given = os.environ.get("COMAL_HOST_ID", "").strip()
    if given:
        return given
    for path in (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id")):
        found = (_read(path) or "").strip()
        if found:
            return found
    return socket.gethostname()


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
        host_id: the holder's host id ("" when an older Comal took it).
        expires_at: when the lease ends unless renewed, ms on the ledger's clock (0: older).
    """

    session_id: str
    pid: int
    host: str
    process_start_id: str
    process_started_at: int
    acquired_at: int
    host_id: str = ""
    expires_at: int = 0


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """The identity fields of one running process."""

    pid: int
    host: str
    start_id: str
    started_at: int
    host_id: str = ""


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
    return ProcessIdentity(pid, socket.gethostname(), start_id, started_at, host_id())


def same_host(lock: LockInfo, me: ProcessIdentity) -> bool:
    """Whether the holder runs on this host (judged by its process rather than its lease)."""
    if lock.host_id:
        return lock.host_id == me.host_id
    return lock.host == me.host


def holder_alive(lock: LockInfo, me: ProcessIdentity, now: int) -> bool:
    """Whether the holder recorded in `lock` still counts (it may be this very process): on
    this host, whether its process runs; elsewhere, whether its lease has not expired."""
    if not same_host(lock, me):
        return not lock.host_id or now < lock.expires_at
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


def held_elsewhere(lock: LockInfo, me: ProcessIdentity) -> SessionLockedError:
    """The error for a session that the live process recorded in `lock` holds."""
    since = datetime.fromtimestamp(lock.acquired_at / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lease = ""
    if not same_host(lock, me) and lock.expires_at:
        until = datetime.fromtimestamp(lock.expires_at / 1000, UTC).strftime("%H:%M:%SZ")
        lease = f" (host {lock.host_id}, lease renewed until {until})"
    return SessionLockedError(
        f"session {lock.session_id} is held by pid {lock.pid} on {lock.host}{lease}"
        f" since {since}; stop that process first"
    )


def lock_payload(lock: LockInfo) -> JSONObject:
    """The identity fields a `lock.*` entry records."""
    payload: JSONObject = {
        "pid": lock.pid,
        "host": lock.host,
        "process_started_at": lock.process_started_at,
        "process_start_id": lock.process_start_id,
    }
    if lock.host_id:
        payload["host_id"] = lock.host_id
    return payload


def read_lock(conn: Conn, session_id: str) -> LockInfo | None:
    """The recorded holder of a session (alive or not), or None."""
    row = conn.execute(
        "SELECT session_id, pid, host, process_start_id, process_started_at, acquired_at,"
        " host_id, expires_at FROM locks WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return None if row is None else LockInfo(*row)


def lost_lease(lock: LockInfo | None, session_id: str) -> SessionLockedError:
    """The error for a process whose lease on `session_id` another holder took over."""
    now = "nobody" if lock is None else f"pid {lock.pid} on {lock.host_id or lock.host}"
    return SessionLockedError(
        f"this process no longer holds session {session_id} (its lease was taken over; now"
        f" held by {now}); it stopped writing to it"
    )


def renew_lease(conn: Conn, session_id: str, me: ProcessIdentity, expires_at: int) -> bool:
    """Push back the lease `me` holds on the session (caller's transaction); False when the
    row no longer names `me` (another process took the session over)."""
    cursor = conn.execute(
        "UPDATE locks SET expires_at = ? WHERE session_id = ? AND pid = ? AND host = ?"
        " AND process_start_id = ?",
        (expires_at, session_id, me.pid, me.host, me.start_id),
    )
    return bool(cursor.rowcount)


def write_lock(conn: Conn, lock: LockInfo) -> None:
    """Record `lock` as the session's holder, replacing any previous one (caller's transaction)."""
    conn.execute("DELETE FROM locks WHERE session_id = ?", (lock.session_id,))
    conn.execute(
        "INSERT INTO locks (session_id, pid, host, process_start_id, process_started_at,"
        " acquired_at, host_id, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            lock.session_id,
            lock.pid,
            lock.host,
            lock.process_start_id,
            lock.process_started_at,
            lock.acquired_at,
            lock.host_id,
            lock.expires_at,
        ),
    )


def delete_lock(conn: Conn, session_id: str, me: ProcessIdentity) -> None:
    """Remove the session's lock if `me` holds it (caller's transaction)."""
    conn.execute(
        "DELETE FROM locks WHERE session_id = ? AND pid = ? AND host = ? AND process_start_id = ?",
        (session_id, me.pid, me.host, me.start_id),
    )


class Heartbeat:
    """A daemon thread calling `beat` every `interval_s` seconds from `start()` to `stop()`
    (the `Ledger` renews its leases with it)."""

    def __init__(self, interval_s: float, beat: Callable[[], object]) -> None:
        self._interval_s = interval_s
        self._beat = beat
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start beating (once; later calls do nothing)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="comal-lease", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            self._beat()

    def stop(self) -> None:
        """Stop beating and wait for a beat under way to end."""
        self._stopped.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
