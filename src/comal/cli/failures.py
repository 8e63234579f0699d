"""Every failure the CLI can meet, as one named `ComalError` with its documented exit code.

The errors it names (DISK_FULL, LEDGER_DAMAGED, FILE_ACCESS, UNEXPECTED) stand in comal.errors
with every other code; this module only decides which one a failure is.

A ComalError passes through (its cause named when SQLite or the OS said more than it did);
anything else is classified here — a full disk, a read-only or missing directory, a damaged
ledger file, an unexpected bug — so the user reads one line naming the cause, never a Python
traceback. `COMAL_DEBUG=1` prints the traceback too, for a bug report.
"""

from __future__ import annotations

import errno
import io
import os
import sqlite3
import sys
from typing import Any

from comal.errors import (
    SALVAGE_HINT,
    ComalError,
    DiskFullError,
    FileAccessError,
    LedgerDamagedError,
    LedgerError,
    OutputError,
    UnexpectedError,
)

_FULL_MARKERS = ("database or disk is full", "no space left on device")
_DAMAGE_MARKERS = (
    "malformed",
    "not a database",
    "could not decode",
    "disk i/o error",
    "file is not a database",
)
_SALVAGE_HINT = SALVAGE_HINT


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and every exception it was raised from or while handling, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _disk_full(chain: list[BaseException]) -> BaseException | None:
    for item in chain:
        if isinstance(item, OSError) and item.errno in (errno.ENOSPC, errno.EDQUOT):
            return item
        if isinstance(item, sqlite3.Error) and any(m in str(item).lower() for m in _FULL_MARKERS):
            return item
    return None


def _access(item: OSError) -> FileAccessError:
    where = f" {item.filename}" if item.filename else ""
    if item.errno == errno.EROFS:
        detail = "is on a read-only file system"
    elif item.errno in (errno.EACCES, errno.EPERM):
        detail = "is not writable or readable by this user (permission denied)"
    else:
        detail = f"cannot be used: {item.strerror or item}"
    return FileAccessError(f"{where.strip() or 'a file'} {detail}")


class _WatchedStdout(io.FileIO):
    """File descriptor 1, remembering the first write that failed."""

    failed: OSError | None = None

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except OSError as exc:
            if _WatchedStdout.failed is None:
                _WatchedStdout.failed = exc
            raise


def watch_stdout() -> None:
    """Write standard output through a stream that remembers a failed write, so that a failure
    of stdout (a redirect to a full disk) is told apart from one of the ledger."""
    stream = sys.stdout
    if stream is None or stream is not sys.__stdout__ or not isinstance(stream, io.TextIOWrapper):
        return  # replaced already (tests capture it): leave it
    try:
        if stream.fileno() != 1:
            return
    except (OSError, ValueError):
        return
    raw = _WatchedStdout(1, "w", closefd=False)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
    )


def stdout_failure() -> OSError | None:
    """Why standard output could not be written, if a write to it failed; standard output is
    then replaced by /dev/null, so that nothing tries again (nor reports it again at exit)."""
    failed = _WatchedStdout.failed
    if failed is not None and sys.stdout is not None and not isinstance(sys.stdout, _Null):
        sys.stdout = _Null(os.devnull, "w")
    return failed


class _Null(io.TextIOWrapper):
    def __init__(self, path: str, mode: str) -> None:
        super().__init__(io.BufferedWriter(io.FileIO(path, mode)))


def explain(exc: BaseException) -> ComalError:
    """The one named error to report for `exc` (which is not changed)."""
    if isinstance(exc, LedgerDamagedError):
        return exc  # already names the damage (and what to do about it)
    chain = _chain(exc)
    if any(isinstance(item, OSError) for item in chain):
        broken = stdout_failure()
        if broken is not None:
            return OutputError(
                f"cannot write to standard output ({broken.strerror or broken}); nothing"
                " recorded is affected"
            )
    full = _disk_full(chain)
    if full is not None:
        return DiskFullError(
            f"the disk is full ({full}); the failed write was rolled back and everything"
            " recorded before it is intact — free space, then resume the session"
        )
    damage = next(
        (
            item
            for item in chain
            if isinstance(item, sqlite3.DatabaseError)
            and any(m in str(item).lower() for m in _DAMAGE_MARKERS)
        ),
        None,
    )
    if damage is not None:
        told = f"{exc.message} — " if isinstance(exc, ComalError) else ""
        return LedgerDamagedError(f"{told}the ledger is damaged ({damage}); {_SALVAGE_HINT}")
    if isinstance(exc, ComalError):
        return exc
    for item in chain:
        if isinstance(item, sqlite3.Error):
            return LedgerError(f"ledger error: {item}")
        if isinstance(item, OSError) and item.errno is not None:
            return _access(item)
    return UnexpectedError(
        f"unexpected {type(exc).__name__}: {exc} (a bug; please report it)."
        " If the ledger may be damaged, " + _SALVAGE_HINT
    )
