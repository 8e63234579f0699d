"""Refuse a window too small for the fixed parts before any session is recorded.

The fixed parts (system prompt, instructions, tool schemas) plus the output reserve and the
margin must fit the window, or no request can ever be sent (`CONTEXT_OVERHEAD`). The engine
decides that when it prepares a request; to decide it before a session exists, the same
session is opened — through the same `open_session` — on a scratch ledger in a temporary
directory, and its first request prepared there. Nothing reaches the real ledger.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from comal.agent.core.events import AgentEvent
from comal.agent.core.session import SessionOptions, open_session
from comal.config import Config
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.tools.base import Tool


def refuse_overhead(
    config: Config, provider: Provider, tools: list[Tool], options: SessionOptions
) -> None:
    """Raise ContextOverheadError when a new session could never send a request.

    Raises:
        ContextOverheadError: the fixed parts, reserve and margin do not fit the window.
    """
    quiet = dataclasses.replace(options, emit=_drop, mcp_failures=())
    with (
        tempfile.TemporaryDirectory(prefix="comal-window-") as tmp,
        Ledger.open(Path(tmp) / "probe.db", durable=False) as scratch,
    ):
        session = open_session(scratch, config, provider, tools, quiet)
        try:
            # Upper bounds of the counts decide most windows without loading a vocabulary.
            if session.engine.bounded_first_view() is None:
                session.engine.prepare()
        finally:
            scratch.release_lock(session.id)


def _drop(_event: AgentEvent) -> None:
    """The probe's events are not shown: the real session announces itself."""
