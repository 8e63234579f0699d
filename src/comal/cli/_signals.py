"""SIGTERM and SIGHUP end a run the way Ctrl+C does: the running task is cancelled.

Cancelling unwinds every layer as SIGINT does — a running Bash kills its process group, the
call is recorded (`uncertain` when its effect is unknown), the session is left `interrupted`
and its lock released — and the process exits 128 + the signal number (143, 129), so the
session stays resumable and no child outlives Comal.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class StoppedBySignal(Exception):
    """The run was cancelled by a stop signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as shells report it."""
        return 128 + self.signum


async def _guarded(main: Coroutine[Any, Any, int]) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None  # called by asyncio.run
    received: list[int] = []

    def stop(signum: int) -> None:
        if not received:
            received.append(signum)
            task.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await main
    except asyncio.CancelledError:
        if received:
            raise StoppedBySignal(received[0]) from None
        raise
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


def run_stoppable(main: Coroutine[Any, Any, int]) -> int:
    """`asyncio.run(main)`, with SIGTERM/SIGHUP cancelling it.

    Raises:
        StoppedBySignal: a stop signal arrived; its `exit_code` is the process's.
    """
    return asyncio.run(_guarded(main))
