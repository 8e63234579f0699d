"""Opening a real session on a scripted provider, as the turn and status tests do."""

from __future__ import annotations

import os
from pathlib import Path

from comal.agent.core.session import Session, SessionOptions, open_session
from comal.agent.core.toolset import standard_tools
from comal.config import Config
from comal.ledger.store import Ledger
from comal.providers.scripted import ScriptedProvider


def config(ledger: Ledger, workspace: Path) -> Config:
    """A configuration whose home is the ledger's folder and whose workspace is `workspace`."""
    return Config(
        home=ledger.path.parent,
        config_dir=ledger.path.parent / "config",
        workspace=workspace,
        env=dict(os.environ),
    )


def opened(
    ledger: Ledger,
    workspace: Path,
    provider: ScriptedProvider,
    *,
    session_id: str | None = None,
    options: SessionOptions | None = None,
) -> Session:
    """A session opened (or resumed, with `session_id`) with the standard tools."""
    return open_session(
        ledger,
        config(ledger, workspace),
        provider,
        standard_tools(),
        options or SessionOptions(),
        session_id=session_id,
        workspace=workspace,
    )
