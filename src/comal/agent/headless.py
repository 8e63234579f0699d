"""Running one task to completion without a terminal UI (`comal -p`, `comal demo`).

Opens (or resumes) the session under its lock, runs the turn, turns every ComalError into a
`Failed` event plus a ledger entry, and always releases the lock. The session status follows
the outcome: `finished` only through finish_call or a final answer, `failed` on errors,
`interrupted` on cancellation — and every one of them stays resumable.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from comal.agent.events import Failed, TurnFinished
from comal.agent.loop import run_turn
from comal.agent.session import Session, SessionOptions, open_session
from comal.config import Config
from comal.errors import ComalError
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.tools.base import Tool


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a headless run ended."""

    session_id: str
    status: str
    answer: str
    error: ComalError | None


async def run_session(session: Session, prompt: str | None) -> Outcome:
    """Run one turn on an open session and record its end state.

    Args:
        session: an open, locked session.
        prompt: the user's message, or None to continue from the ledger.
    """
    try:
        answer = await run_turn(session, prompt)
    except ComalError as exc:
        session.record("warning", {"code": exc.code, "message": exc.message})
        session.ledger.set_status(session.id, "failed")
        session.emit(Failed(session.id, exc.code, exc.message))
        return Outcome(session.id, "failed", "", exc)
    except asyncio.CancelledError:
        session.ledger.set_status(session.id, "interrupted")
        raise
    status = session.ledger.session(session.id).status
    if status not in ("finished",):
        status = "answered"
        session.ledger.set_status(session.id, "active")
    session.emit(TurnFinished(session.id, answer, 0, status))
    return Outcome(session.id, status, answer, None)


async def run_headless(
    ledger: Ledger,
    config: Config,
    provider: Provider,
    tools: list[Tool],
    options: SessionOptions,
    *,
    prompt: str | None,
    session_id: str | None = None,
) -> Outcome:
    """Open or resume a session, run one turn, release the lock."""
    session = open_session(ledger, config, provider, tools, options, session_id=session_id)
    try:
        return await run_session(session, prompt)
    finally:
        ledger.release_lock(session.id)
