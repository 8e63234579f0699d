"""Starting the TUI from the command line: `comal` on a terminal, `comal --resume UUID`.

The command line imports this module only when it opens the TUI, so `comal -p` never loads
Textual. The session's lock is released here whatever way the app ends, and the command that
resumes the session is printed once the screen is restored. A wait on a PostgreSQL ledger's
server is shown as a notification (`comal -p` says it on stderr).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import TextIO

from comal.agent.core.session import SessionOptions
from comal.config import Config
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.tools.base import Tool
from comal.tui.app import ComalApp, ModelList, ModelSwitch, SessionStart

STOP_GRACE_S = 10.0
"""How long a stop signal waits for the app to leave as `/quit` does before cancelling it."""


async def run_tui(
    ledger: Ledger,
    config: Config,
    provider: Provider,
    tools: list[Tool],
    options: SessionOptions,
    *,
    session_id: str | None = None,
    workspace: Path | None = None,
    switch_model: ModelSwitch | None = None,
    first_message: str | None = None,
    list_models: ModelList | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the interactive front end until the user quits; returns the exit code.

    Args:
        ledger: the open ledger.
        config: the resolved configuration.
        provider: the model provider.
        tools: the tools offered to the model.
        options: limits; the app supplies its own emit, ask and cancel hooks.
        session_id: a session to resume; None starts one on the first message.
        workspace: the workspace (default: the configuration's).
        switch_model: builds the provider for another model (`/model NAME`).
        first_message: sent once the app is up (`comal "task"`).
        list_models: the server's models (`/model` lists and checks them).
        out: where the resume line goes (stdout).
    """
    app = ComalApp(
        SessionStart(
            ledger,
            config,
            provider,
            tools,
            options,
            session_id,
            workspace,
            switch_model,
            first_message,
            list_models,
        )
    )
    # A wait on the ledger's server is said in the app, not on the terminal it draws on.
    ledger.on_wait(lambda text: app.notify(text, title="ledger", severity="warning"))
    stopped = _stop_signals(app)
    try:
        await app.run_async()
    except asyncio.CancelledError:
        if not stopped:
            raise
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
    finally:
        for handle in stopped.fallback:
            handle.cancel()
        if app.session is not None:
            ledger.release_lock(app.session.id)
            _say(resume_line(app.session.id), out or sys.stdout, hung_up=stopped == [signal.SIGHUP])
    if stopped:
        name = signal.Signals(stopped[0]).name
        _say(f"comal: stopped by {name}", sys.stderr, hung_up=stopped == [signal.SIGHUP])
        return 128 + stopped[0]
    return app.return_code or 0


def _say(line: str, stream: TextIO, *, hung_up: bool) -> None:
    """Print `line`; after a hang-up the terminal may be gone, and nobody is left to tell that
    it could not be written (the exit status still says SIGHUP)."""
    try:
        print(line, file=stream, flush=True)
    except OSError:
        if not hung_up:
            raise
        # What stays buffered would fail again when the interpreter flushes it at exit.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


class _Stopped(list[int]):
    """The stop signal received (at most one), and the timer that stops waiting for the app."""

    fallback: list[asyncio.TimerHandle]


def _stop_signals(app: ComalApp) -> _Stopped:
    """SIGTERM and SIGHUP (a closed terminal) stop the app as `/quit` does: the running turn
    is cancelled, so a running command's process group is killed and its call recorded. A
    second signal, or an app still running `STOP_GRACE_S` later (a terminal that no longer
    takes output), cancels the whole run at once, as the command line does for `-p`.

    These replace the command line's handlers while the app runs; the command line removes
    them when the run ends.
    """
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    stopped = _Stopped()
    stopped.fallback = []

    def cancel() -> None:
        if main is not None and not main.done():
            main.cancel()

    def stop(signum: int) -> None:
        if stopped:
            cancel()
            return
        stopped.append(signum)
        stopped.fallback.append(loop.call_later(STOP_GRACE_S, cancel))
        if not app.call_later(app.stop_by_signal, signum):
            cancel()  # the app is not taking messages (not started, or closing)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop, signum)
    return stopped


def resume_line(session_id: str) -> str:
    """What the TUI prints when it closes on a session."""
    return f"Resume this session with: comal --resume {session_id}"
