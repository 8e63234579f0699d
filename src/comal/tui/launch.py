"""Starting the TUI from the command line: `comal` on a terminal, `comal --resume UUID`.

The command line imports this module only when it opens the TUI, so `comal -p` never loads
Textual. The session's lock is released here whatever way the app ends, and the command that
resumes the session is printed once the screen is restored. A wait on a PostgreSQL ledger's
server is shown as a notification (`comal -p` says it on stderr).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from comal.agent.core.session import SessionOptions
from comal.config import Config
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.tools.base import Tool
from comal.tui.app import ComalApp, ModelList, ModelSwitch, SessionStart


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
    try:
        await app.run_async()
    finally:
        if app.session is not None:
            ledger.release_lock(app.session.id)
            print(resume_line(app.session.id), file=out or sys.stdout, flush=True)
    return app.return_code or 0


def resume_line(session_id: str) -> str:
    """What the TUI prints when it closes on a session."""
    return f"Resume this session with: comal --resume {session_id}"
