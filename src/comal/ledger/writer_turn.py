"""A writer's turn among the processes that write one SQLite ledger.

SQLite lets one writer in at a time (`BEGIN IMMEDIATE`) and has the others wait in its busy
handler, which sleeps 1, 2, 5, … up to 100 ms between tries instead of waking when the writer
is done. With 8 writers appending the median append stayed under a millisecond while p99 was
56–160 ms and the worst seconds: time spent asleep after the lock was free. A writer first
takes an exclusive `flock` on the companion file `LEDGER-turn`; the kernel wakes a waiter the
moment the holder lets go, so a wait lasts the others' commits and no more.

- The turn only orders Comal's own writers. `BEGIN IMMEDIATE` still guards the file, so a
  writer without it (the sqlite3 shell, a process whose turn file could not be opened) is
  still kept out by SQLite and waits in the busy handler as before.
- The wait is bounded by `WAIT_S`, SQLite's own busy timeout; past it the writer goes on to
  `BEGIN IMMEDIATE` without the turn. A blocking `flock` has no timeout, so a contended wait
  blocks in a helper thread on a descriptor of its own, and a thread whose wait was given up
  lets go of the turn as soon as it gets it.
- A process that dies holding the turn loses it with its descriptors.
- Where the file cannot be created or opened (a read-only directory), there is no turn.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path

WAIT_S = 30.0
"""The longest wait for the turn: SQLite's busy timeout on the same connection (`schema.py`)."""


class WriterTurn:
    """The turn of one ledger connection (`take` before `BEGIN IMMEDIATE`, `give` after the
    transaction ends). Not shared between threads: the ledger's mutex orders its own writes."""

    def __init__(self, ledger_path: Path) -> None:
        self.path = Path(f"{ledger_path}-turn")
        self._fd: int | None = None
        self._held: int | None = None
        self._unavailable = False

    def take(self, wait_s: float = WAIT_S) -> bool:
        """Wait for the turn (at most `wait_s`); whether it is held."""
        fd = self._open()
        if fd is None:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._held = _Wait(self.path).until(wait_s)
        except OSError:
            return False
        else:
            self._held = fd
        return self._held is not None

    def give(self) -> None:
        """Let the next writer in (nothing when the turn is not held)."""
        fd, self._held = self._held, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        if fd != self._fd:
            os.close(fd)

    def close(self) -> None:
        self.give()
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _open(self) -> int | None:
        if self._fd is None and not self._unavailable:
            self._fd = _open(self.path)
            self._unavailable = self._fd is None
        return self._fd


def _open(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


class _Wait:
    """One contended wait, blocked in its own thread on its own descriptor, handed over to
    the caller only if it got the turn before the caller gave up."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._mutex = threading.Lock()
        self._done = threading.Event()
        self._fd: int | None = None
        self._given_up = False

    def until(self, wait_s: float) -> int | None:
        """The descriptor holding the turn, or None when `wait_s` passed first."""
        threading.Thread(target=self._run, name="comal-ledger-turn", daemon=True).start()
        self._done.wait(wait_s)
        with self._mutex:
            self._given_up = True
            return self._fd

    def _run(self) -> None:
        fd = _open(self._path)
        if fd is None:
            self._done.set()
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            self._done.set()
            return
        with self._mutex:
            if not self._given_up:
                self._fd = fd
                self._done.set()
                return
        fcntl.flock(fd, fcntl.LOCK_UN)  # the caller went on without the turn
        os.close(fd)
