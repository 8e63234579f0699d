"""The turn lifecycle for both front ends (`comal -p`, `comal demo`, the TUI).

Opens (or resumes) the session under its lock, runs the turn, turns every ComalError into a
`Failed` event plus a ledger entry, and always releases the lock. The session status follows
the outcome: `finished` only through finish_call or a final answer, `refused` when the model
declined (the session stays active), `failed` on errors,
`interrupted` on cancellation — and every one of them stays resumable.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from comal.agent.children import DELEGATION_TOOLS, Delegation, offers_delegation
from comal.agent.events import Failed, Notice, TextStreamed, TurnFinished
from comal.agent.loop import run_turn
from comal.agent.recovery import recover
from comal.agent.session import Session, SessionOptions, open_session
from comal.agent.session_facts import final_answer, render_state, session_state
from comal.config import Config
from comal.errors import ComalError, RefusedError
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


def _replies(session: Session) -> int:
    """Model replies recorded so far (the steps a turn took is the difference)."""
    return len(session.ledger.entries(session.id, kinds=("message.assistant",)))


async def run_session(
    session: Session, prompt: str | None, *, standing_status: str | None = None
) -> Outcome:
    """Run one turn on an open session and record its end state.

    Args:
        session: an open, locked session.
        prompt: the user's message, or None to continue from the ledger.
        standing_status: the status an already answered session had before this follow-up
            turn; a failed follow-up records the failure and leaves that status (and the
            earlier answer) standing instead of marking the session `failed`.
    """
    replies_before = _replies(session)
    try:
        answer = await run_turn(session, prompt)
    except RefusedError as exc:
        # Not a failure of Comal's: the session stays open for another message.
        session.ledger.set_status(session.id, "active")
        session.emit(TurnFinished(session.id, "", _replies(session) - replies_before, "refused"))
        return Outcome(session.id, "refused", "", exc)
    except ComalError as exc:
        status = standing_status or "failed"
        session.record("warning", {"code": exc.code, "message": exc.message, "turn": "failed"})
        session.ledger.set_status(session.id, status)
        session.emit(Failed(session.id, exc.code, exc.message))
        return Outcome(session.id, "failed", "", exc)
    except asyncio.CancelledError:
        session.ledger.set_status(session.id, "interrupted")
        raise
    status = session.ledger.session(session.id).status
    if status not in ("finished",):
        status = "answered"
        session.ledger.set_status(session.id, "active")
    session.emit(TurnFinished(session.id, answer, _replies(session) - replies_before, status))
    return Outcome(session.id, status, answer, None)


def is_closed(ledger: Ledger, session_id: str) -> bool:
    """Whether the session is finished, by its status or by a `session.finished` entry newer
    than its last user message (a crash can fall between that entry and the status update).
    Reads only: a resumed run that holds the lock repairs the status."""
    if ledger.session(session_id).status == "finished":
        return True
    tail = ledger.entries(session_id, kinds=("message.user", "session.finished"))
    return bool(tail) and tail[-1].kind == "session.finished"


def _closed(session: Session) -> bool:
    if not is_closed(session.ledger, session.id):
        return False
    if session.ledger.session(session.id).status != "finished":
        session.ledger.set_status(session.id, "finished")
    return True


async def resume_session(session: Session, prompt: str | None) -> Outcome:
    """Continue a recorded session: recover its dangling calls, then run a turn if needed.

    A finished session given no new message makes no model call: its final answer and state are
    shown. A new message reopens it. Without a message, pending calls, an open plan or an
    unanswered message continue; an answered session with nothing open stays as it is.

    Args:
        session: a resumed, locked session.
        prompt: a new user message, or None.
    """
    standing: str | None = None
    if _closed(session):
        if prompt is None:
            answer = final_answer(session.ledger.entries(session.id)) or ""
            session.emit(TextStreamed(answer + "\n"))
            session.emit(Notice("STATE", render_state(session_state(session.ledger, session.id))))
            session.emit(TurnFinished(session.id, answer, 0, "finished"))
            return Outcome(session.id, "finished", answer, None)
        standing = "finished"
        session.ledger.set_status(session.id, "active")
    report = await recover(session, continue_plan=prompt is None)
    if prompt is None and not report.needs_model_call:
        answer = report.last_answer or ""
        detail = "no pending calls, open plan or unanswered message; add one with -p TEXT"
        session.emit(Notice("NOTHING_TO_CONTINUE", detail))
        session.emit(TurnFinished(session.id, answer, 0, "answered"))
        return Outcome(session.id, "answered", answer, None)
    if standing is None and report.last_answer and prompt is not None:
        standing = session.ledger.session(session.id).status
    return await run_session(session, prompt, standing_status=standing)


async def run_headless(
    ledger: Ledger,
    config: Config,
    provider: Provider,
    tools: list[Tool],
    options: SessionOptions,
    *,
    prompt: str | None,
    session_id: str | None = None,
    delegate: tuple[str, ...] | None = None,
) -> Outcome:
    """Open or resume a session, run one turn, release the lock.

    Args:
        delegate: the delegation tools to offer; None: all of them when `offers_delegation`.
    """
    if delegate is None:
        window = provider.capabilities.context_window
        delegate = DELEGATION_TOOLS if offers_delegation(config, window) else ()
    delegation = Delegation(ledger, config, provider, tools, options, delegate)
    session = open_session(
        ledger,
        config,
        provider,
        tools,
        options,
        session_id=session_id,
        bound=delegation if delegate else None,
    )
    try:
        if session_id is not None:
            return await resume_session(session, prompt)
        return await run_session(session, prompt)
    finally:
        ledger.release_lock(session.id)
