"""The terminal the TUI draws on may go away (a closed window, a killed tmux): writes to it
then fail with EIO, and that must not stop the app from ending.

Textual writes the screen from a thread through a bounded queue; the first failed write ends
that thread, the queue fills, and the next write blocks the event loop for good — with it the
handlers of SIGHUP and SIGTERM, so the process outlived its terminal, drawing on nothing.
`sturdy` wraps the driver's output so that a failed write is dropped: the loop keeps running,
and the SIGHUP the kernel sends for the closed terminal ends the app as `/quit` does.

The kernel sends that SIGHUP only to a terminal's controlling process group. A TUI started
without one (by a harness, under `setsid`) learns it only from the terminal itself, and only
then is it watched: reads
return end-of-file at once, so Textual's input thread spins, and writes fail. A watch thread
therefore waits on the input for a hang-up (`poll` with no event asked: it wakes only on
POLLHUP, POLLERR or POLLNVAL, never for input), and the first hang-up or failed write raises
SIGHUP in the process itself, once: one way out, whoever notices first.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Callable
from typing import IO

from textual.driver import Driver

HANG_UP_POLL_MS = 500
"""How often the watch thread looks whether it should stop (it wakes at once on a hang-up)."""


def controlling(fd: int) -> bool:
    """Whether `fd` is this process's controlling terminal (the kernel's SIGHUP then comes)."""
    try:
        os.tcgetpgrp(fd)  # ENOTTY unless `fd` is the calling process's controlling terminal
    except OSError:
        return False
    return True


class _HangUp:
    """Raise SIGHUP in this process once, the first time the terminal is seen gone — only
    where the kernel will not (`armed`: the terminal is not the controlling one)."""

    def __init__(self) -> None:
        self._raised = threading.Event()
        self.armed = False

    def __call__(self) -> None:
        if self.armed and not self._raised.is_set():
            self._raised.set()
            os.kill(os.getpid(), signal.SIGHUP)

    def watch(self, fd: int, stop: threading.Event) -> None:
        """Wait on `fd` for a hang-up until `stop` is set (runs in its own thread)."""
        try:
            poller = select.poll()
            poller.register(fd, 0)
            while not stop.is_set() and not self._raised.is_set():
                if poller.poll(HANG_UP_POLL_MS):
                    self()
                    return
        except (OSError, ValueError):
            return


class _Sturdy:
    """A text stream whose writes and flushes never raise `OSError` (they are dropped; the
    first failure is a hang-up)."""

    def __init__(self, inner: IO[str], hang_up: Callable[[], None]) -> None:
        self._inner = inner
        self._hang_up = hang_up
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._inner.write(text)
            except OSError:
                self.broken = True
                self._hang_up()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._inner.flush()
            except OSError:
                self.broken = True
                self._hang_up()

    def fileno(self) -> int:
        return self._inner.fileno()

    def isatty(self) -> bool:
        with contextlib.suppress(OSError, ValueError):
            return self._inner.isatty()
        return False


def sturdy(driver_class: type[Driver]) -> type[Driver]:
    """`driver_class` with its output wrapped by `_Sturdy` and its input watched for a hang-up
    (drivers without a `_file`, such as the headless one of tests, are returned as they are)."""

    class SturdyDriver(driver_class):  # type: ignore[valid-type,misc]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            self._hang_up = _HangUp()
            self._watch_stop = threading.Event()
            file = getattr(self, "_file", None)
            if file is not None:
                self._file = _Sturdy(file, self._hang_up)

        def start_application_mode(self) -> None:
            super().start_application_mode()
            fd = getattr(self, "fileno", None)
            if isinstance(fd, int) and getattr(self, "_file", None) is not None:
                if controlling(fd):
                    return
                self._hang_up.armed = True
                threading.Thread(
                    target=self._hang_up.watch,
                    args=(fd, self._watch_stop),
                    name="comal-hang-up",
                    daemon=True,
                ).start()

        def stop_application_mode(self) -> None:
            self._watch_stop.set()
            super().stop_application_mode()

    SturdyDriver.__name__ = f"Sturdy{driver_class.__name__}"
    return SturdyDriver
