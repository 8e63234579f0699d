"""The turn lifecycle for both front ends (`comal -p`, `comal demo`, the TUI).

Starting a turn, ending it, cancelling it and the user's compaction requests all happen here;
the front ends call these functions and write no ledger entry themselves.

- A turn runs on an open, locked session (`run_session`), or first settles what a resumed or
  cancelled session left dangling (`resume_session`). Every ComalError becomes a `Failed` event
  plus a `warning` entry marked `"turn": "failed"`.
- The status is derived from the entries (`session.status`): `finished` only through
  finish_call, `active` after an answer or a refusal (the session stays open for another
  message), `failed` when a turn of a session that never answered fails (a failed follow-up
  leaves the earlier answer and status standing), `interrupted` when a turn was cancelled —
  and every one of them stays resumable. This module writes the row, the status's index, at
  each of those points.
- A cancelled turn (`end_turn(cancelled=True)`) gives each call of its batch that never started
  a `denied` receipt, so nothing the user stopped runs later; a `/compact` waiting for the turn
  boundary is dropped with the cancel (`cancel_turn`).
- `/compact` derives at once when no turn runs; during one it records `compact.requested`,
  which the loop honours before its next model call, and whatever is still pending when the
  turn ends is derived then. A compaction that would not make the view smaller is refused with
  its figures (the engine records `compact.cancelled`), and the session goes on as it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from comal.agent.children.run import DELEGATION_TOOLS, Delegation, offers_delegation
from comal.agent.core.events import Failed, Notice, TextStreamed, TurnFinished
from comal.agent.core.loop import run_turn
from comal.agent.core.recovery import recover
from comal.agent.core.session import Session, SessionOptions, open_session
from comal.agent.features.state import render_state, session_state
from comal.config import Config
from comal.context.engine import Checkpoint
from comal.errors import ComalError, CompactNotSmallerError, RefusedError
from comal.ledger.records import CompactCancelled, CompactRequested, Kind, WarningRecord
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.session import FINISHED, final_answer, index_running, index_status, lifecycle, open_calls
from comal.tools.base import Tool

CANCELLED_BEFORE_START = "cancelled by the user (Esc) before it started; it did not run"
"""The receipt of a call the cancelled turn never started."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a turn ended."""

    session_id: str
    status: str
    answer: str
    error: ComalError | None


def _replies(session: Session) -> int:
    """Model replies recorded so far (the steps a turn took is the difference)."""
    return len(session.ledger.entries(session.id, kinds=(Kind.MESSAGE_ASSISTANT,)))


async def run_session(session: Session, prompt: str | None) -> Outcome:
    """Run one turn on an open session and index the status it ends with.

    Args:
        session: an open, locked session.
        prompt: the user's message, or None to continue from the ledger.
    """
    ledger, sid = session.ledger, session.id
    replies_before = _replies(session)
    index_running(ledger, sid)
    try:
        answer = await run_turn(session, prompt)
    except RefusedError as exc:
        # Not a failure of Comal's: the session stays open for another message.
        index_status(ledger, sid, running=False)
        session.emit(TurnFinished(sid, "", _replies(session) - replies_before, "refused"))
        return Outcome(sid, "refused", "", exc)
    except ComalError as exc:
        session.write(WarningRecord(exc.code, exc.message, turn="failed"))
        index_status(ledger, sid, running=False)
        session.emit(Failed(sid, exc.code, exc.message))
        return Outcome(sid, "failed", "", exc)
    except asyncio.CancelledError:
        index_status(ledger, sid, running=False)
        raise
    status = "finished" if index_status(ledger, sid, running=False) == FINISHED else "answered"
    session.emit(TurnFinished(sid, answer, _replies(session) - replies_before, status))
    return Outcome(sid, status, answer, None)


async def resume_session(session: Session, prompt: str | None) -> Outcome:
    """Continue a recorded session: recover its dangling calls, then run a turn if needed.

    A finished session given no new message makes no model call: its final answer and state are
    shown. A new message reopens it. Without a message, pending calls, an open plan or an
    unanswered message continue; an answered session with nothing open stays as it is.

    Args:
        session: a resumed, locked session.
        prompt: a new user message, or None.
    """
    finished = lifecycle(session.ledger, session.id).status(running=False) == FINISHED
    if finished and prompt is not None:
        index_running(session.ledger, session.id)  # recovery settles a reopened session
    # A finished session too: a call the close left without a result gets one.
    report = await recover(session, continue_plan=prompt is None)
    if prompt is None and report.continuation == "finished":
        answer = final_answer(session.ledger.entries(session.id)) or ""
        session.emit(TextStreamed(answer + "\n"))
        session.emit(Notice("STATE", render_state(session_state(session.ledger, session.id))))
        session.emit(TurnFinished(session.id, answer, 0, "finished"))
        return Outcome(session.id, "finished", answer, None)
    if prompt is None and not report.needs_model_call:
        answer = report.last_answer or ""
        detail = "no pending calls, open plan or unanswered message; add one with -p TEXT"
        session.emit(Notice("NOTHING_TO_CONTINUE", detail))
        session.emit(TurnFinished(session.id, answer, 0, "answered"))
        return Outcome(session.id, "answered", answer, None)
    return await run_session(session, prompt)


def start_turn(
    session: Session, prompt: str, *, recover_first: bool
) -> Coroutine[Any, Any, Outcome]:
    """The turn to run for a message typed in the TUI: recovery first on a resumed session and
    after a cancel."""
    return resume_session(session, prompt) if recover_first else run_session(session, prompt)


def cancel_turn(session: Session) -> bool:
    """The user cancels the running turn: a `/compact` waiting for the turn boundary is dropped
    with it (recorded as `compact.cancelled`). True when one was."""
    if session.engine.pending_compaction() != "user":
        return False
    session.write(CompactCancelled("user"))
    return True


@dataclass(frozen=True, slots=True)
class Compaction:
    """What a `/compact` did: queued for the turn boundary, derived, refused or failed."""

    checkpoint: Checkpoint | None = None
    refused: str | None = None
    """COMPACT_NOT_SMALLER's message with its figures (the view stays as it was)."""
    failed: ComalError | None = None

    @property
    def queued(self) -> bool:
        """Recorded as `compact.requested`: the running turn derives it at its boundary."""
        return self.checkpoint is None and self.refused is None and self.failed is None


def request_compaction(ledger: Ledger, session_id: str) -> None:
    """Ask the process running the session to derive a checkpoint at its next turn boundary."""
    ledger.append_record(session_id, CompactRequested("user"))


def compact(session: Session, *, running: bool) -> Compaction:
    """`/compact`: derive now, or, while a turn runs, at its boundary."""
    if running:
        request_compaction(session.ledger, session.id)
        return Compaction()
    try:
        return Compaction(checkpoint=session.engine.compact(by="user"))
    except CompactNotSmallerError as exc:
        return Compaction(refused=exc.message)
    except ComalError as exc:
        return Compaction(failed=exc)


def end_turn(session: Session, *, cancelled: bool) -> Compaction | None:
    """After a turn: a cancelled one's unstarted calls get their `denied` receipts; then a
    compaction still pending is derived (None: none was)."""
    if cancelled:
        for open_call in open_calls(session.ledger.entries(session.id)):
            if open_call.started is None:
                # The user stopped the turn: these must not run later as "never started".
                session.runner.refuse(open_call.call, CANCELLED_BEFORE_START, mode="cancel")
    if session.engine.pending_compaction() is None:
        return None
    return compact(session, running=False)


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
