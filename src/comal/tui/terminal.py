"""The terminal the TUI draws on may go away (a closed window, a killed tmux): writes to it
then fail with EIO, and that must not stop the app from ending.

Textual writes the screen from a thread through a bounded queue; the first failed write ends
that thread, the queue fills, and the next write blocks the event loop for good — with it the
handlers of SIGHUP and SIGTERM, so the process outlived its terminal, drawing on nothing.
`sturdy` wraps the driver's output so that a failed write is dropped: the loop keeps running,
and the SIGHUP the kernel sends for the closed terminal ends the app as `/quit` does.
"""

from __future__ import annotations

import contextlib
from typing import IO

from textual.driver import Driver


class _Sturdy:
    """A text stream whose writes and flushes never raise `OSError` (they are dropped)."""

    def __init__(self, inner: IO[str]) -> None:
        self._inner = inner
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._inner.write(text)
            except OSError:
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._inner.flush()
            except OSError:
                self.broken = True

    def fileno(self) -> int:
        return self._inner.fileno()

    def isatty(self) -> bool:
        with contextlib.suppress(OSError, ValueError):
            return self._inner.isatty()
        return False


def sturdy(driver_class: type[Driver]) -> type[Driver]:
    """`driver_class` with its output wrapped by `_Sturdy` (drivers without a `_file`, such
    as the headless one of tests, are returned as they are)."""

    class SturdyDriver(driver_class):  # type: ignore[valid-type,misc]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            file = getattr(self, "_file", None)
            if file is not None:
                self._file = _Sturdy(file)

    SturdyDriver.__name__ = f"Sturdy{driver_class.__name__}"
    return SturdyDriver
