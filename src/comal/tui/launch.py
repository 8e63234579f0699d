"""Starting the TUI from the command line: `comal` on a terminal, `comal --resume UUID`.

The command line imports this module only when it opens the TUI, so `comal -p` never loads
Textual. The session's lock is released here whatever way the app ends. A wait on a
PostgreSQL ledger's server is shown as a notification (`comal -p` says it on stderr).
"""

from __future__ import annotations

from pathlib import Path

from comal.agent.session import SessionOptions
from comal.config import Config
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.tools.base import Tool
from comal.tui.app import ComalApp, ModelSwitch, SessionStart


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
    """
    app = ComalApp(
        SessionStart(ledger, config, provider, tools, options, session_id, workspace, switch_model)
    )
    # A wait on the ledger's server is said in the app, not on the terminal it draws on.
    ledger.on_wait(lambda text: app.notify(text, title="ledger", severity="warning"))
    try:
        await app.run_async()
    finally:
        if app.session is not None:
            ledger.release_lock(app.session.id)
    return app.return_code or 0
