"""Writes to a terminal that went away (a pty whose other end is closed: EIO) are dropped, so
Textual's writer thread keeps draining its queue and the app can still end; without that, the
thread died at the first failed write and the 31st write blocked the event loop for good."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread
from textual.drivers.linux_driver import LinuxDriver

from comal.tui.terminal import _Sturdy, sturdy


@contextmanager
def _dead_terminal(gone: list[str]) -> Iterator[_Sturdy]:
    master, slave = os.openpty()
    stream = os.fdopen(slave, "w", encoding="utf-8")
    os.close(master)  # the terminal is gone: writes to its slave side fail with EIO
    try:
        yield _Sturdy(stream, lambda: gone.append("hang-up"))
    finally:
        with contextlib.suppress(OSError):  # closing flushes what is still buffered
            stream.close()


def test_a_write_to_a_closed_terminal_is_dropped_marks_it_broken_and_hangs_up() -> None:
    gone: list[str] = []
    with _dead_terminal(gone) as out:
        assert (out.write("\x1b[?1049l"), out.broken, gone) == (8, False, [])  # buffered
        out.flush()
        assert (out.broken, out.write("more"), gone) == (True, 4, ["hang-up"])
        out.flush()
    assert gone == ["hang-up"]  # said once: later failures are dropped silently


def test_the_writer_thread_outlives_a_closed_terminal() -> None:
    with _dead_terminal([]) as out:
        writer = WriterThread(out)  # type: ignore[arg-type]
        writer.start()

        def write_many() -> None:
            for _ in range(MAX_QUEUED_WRITES * 4):
                writer.write("\x1b[?25h" * 100)

        writes = threading.Thread(target=write_many, daemon=True)
        writes.start()
        writes.join(timeout=60)  # a liveness bound: blocked writes never end
        alive = writes.is_alive()
        if not alive:
            writer.stop()
        assert (alive, writer.is_alive(), out.broken) == (False, False, True)


def test_the_apps_driver_wraps_the_terminal() -> None:
    driver_class = sturdy(LinuxDriver)
    assert issubclass(driver_class, LinuxDriver)
    assert driver_class.__name__ == "SturdyLinuxDriver"
