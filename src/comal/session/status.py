"""A session's status, derived from its entries; the `sessions` row is only an index of it.

The lifecycle entries decide, in ledger order (`derive`):
- a `message.user` opens a turn (and reopens a finished session);
- an assistant message that asks for no tool call (an answer, or a refusal) ends the turn:
  `active`;
- `session.finished` (a successful finish_call) ends it: `finished`;
- a `warning` marked `"turn": "failed"` ends a failed turn: `failed` — unless the session had
  answered by then, in which case the earlier answer and its status stand (a failed
  follow-up does not undo what was done);
- a child's `child.receipt` settles the child: `finished`, or `failed` for any other outcome;
- a turn still open at the end is `active` while a process runs it and `interrupted` once
  nothing does (cancelled, signalled or crashed: it is resumable either way).

A session no Comal process ever held (no `lock.acquired` or `lock.reclaimed`: imported, or
built by hand) has no lifecycle of its own to derive from: its row stays what it was recorded
with.

The process holding the session's lock writes the row from this derivation at each lifecycle
point (`index_status`: the session opened, a turn started or ended, finish_call, a receipt),
so listings can sort and filter on an index. Readers (`session_status`) derive: the one thing
the entries cannot tell — whether an open turn is running or was just cancelled in a process
that still holds the session — is read from the row, and only while that holder is alive. So
a row a crash left behind (`active` mid-turn, or `active` after a `session.finished` whose row
update never came) is never what a listing, `--continue`, `/state` or a resume shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import assert_never

from comal.errors import ComalError, LedgerDamagedError
from comal.ledger.entry import Entry, SessionInfo
from comal.ledger.records import (
    AssistantMessage,
    ChildReceiptRecord,
    Kind,
    WarningRecord,
    kind_of,
)
from comal.ledger.store import Ledger
from comal.messages import message_from_json

RECEIPT_KIND = Kind.CHILD_RECEIPT
"""The entry that closes a child session with its exact receipt (see `agent.children`)."""

ACTIVE = "active"
FINISHED = "finished"
FAILED = "failed"
INTERRUPTED = "interrupted"
DAMAGED = "damaged"
"""What readers show for a session with an entry that does not decode (`comal verify`)."""

HELD_KINDS = (Kind.LOCK_ACQUIRED, Kind.LOCK_RECLAIMED)
"""The entries a Comal process records when it takes a session (to run its turns)."""
LIFECYCLE_KINDS = (
    Kind.MESSAGE_USER,
    Kind.MESSAGE_ASSISTANT,
    Kind.SESSION_FINISHED,
    Kind.WARNING,
    RECEIPT_KIND,
    *HELD_KINDS,
)
"""The entry kinds `derive` reads."""


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """Where a session's recorded lifecycle stands."""

    settled: str
    """The status its last ended turn left (`active` before any)."""
    open: bool
    """A turn began after that and has not ended."""
    held: bool = True
    """A Comal process has held the session (else there is no lifecycle to derive from)."""

    def status(self, *, running: bool) -> str:
        """The status, given whether a process is running the open turn right now."""
        if not self.open:
            return self.settled
        return ACTIVE if running else INTERRUPTED


def _asks_for_tools(entry: Entry) -> bool:
    raw = AssistantMessage.from_entry(entry).message
    if raw is None:
        return False
    try:
        return bool(message_from_json(raw).tool_calls)
    except (ValueError, KeyError):
        return False


def derive(entries: Iterable[Entry]) -> Lifecycle:
    """The lifecycle the entries record (any entries: kinds other than `LIFECYCLE_KINDS` are
    skipped). Every kind is decided here (`assert_never`): a new one says whether it moves
    the lifecycle."""
    settled, is_open, answered, held = ACTIVE, False, False, False
    for entry in entries:
        match kind_of(entry):
            case Kind.LOCK_ACQUIRED | Kind.LOCK_RECLAIMED:
                held = True
            case Kind.MESSAGE_USER:
                is_open = True
            case Kind.MESSAGE_ASSISTANT:
                if not _asks_for_tools(entry):
                    settled, is_open = ACTIVE, False
                    answered = answered or AssistantMessage.from_entry(entry).finish != "refusal"
            case Kind.SESSION_FINISHED:
                settled, is_open, answered = FINISHED, False, True
            case Kind.WARNING:
                if WarningRecord.from_entry(entry).turn == FAILED:
                    is_open = False
                    if not answered:
                        settled = FAILED
            case Kind.CHILD_RECEIPT:
                finished = ChildReceiptRecord.from_entry(entry).status == FINISHED
                settled, is_open = (FINISHED if finished else FAILED), False
            case (
                Kind.SESSION_STARTED
                | Kind.SESSION_TOOLS
                | Kind.SESSION_PLUGINS
                | Kind.MESSAGE_SUMMARY
                | Kind.PROVIDER_REQUEST
                | Kind.PROVIDER_RESENT
                | Kind.PROVIDER_ERROR
                | Kind.RESPONSE_DISCARDED
                | Kind.TOOL_STARTED
                | Kind.TOOL_RESULT
                | Kind.PROJECTION
                | Kind.CHECKPOINT
                | Kind.PRESSURE_DEFERRED
                | Kind.CONTEXT_CALIBRATED
                | Kind.BOARD_UPDATED
                | Kind.COMPACT_REQUESTED
                | Kind.COMPACT_CANCELLED
                | Kind.SESSION_CONFIGURED
                | Kind.SESSION_FORKED
                | Kind.SESSION_REWOUND
                | Kind.HOOK_RUN
                | Kind.USER_SHELL
                | Kind.SESSION_RESUMED
                | Kind.SESSION_MOVED
                | None  # a kind a newer Comal wrote
            ):
                pass
            case unknown:
                assert_never(unknown)
    return Lifecycle(settled, is_open, held)


def lifecycle(ledger: Ledger, session_id: str, *, strict: bool = False) -> Lifecycle:
    """The recorded lifecycle of one session; settled `damaged` when one of its entries does
    not decode (a reader shows it so and goes on).

    Raises:
        LedgerDamagedError: with `strict`, an entry does not decode (the holder indexing the
            status never writes `damaged`: the damage is reported).
    """
    try:
        return derive(ledger.entries(session_id, kinds=LIFECYCLE_KINDS))
    except LedgerDamagedError:
        if strict:
            raise
        return Lifecycle(DAMAGED, False)


def session_status(ledger: Ledger, session_id: str) -> str:
    """The status every reader shows, derived from the entries; only whether an open turn is
    still running is read from the row, and only while a live process holds the session.

    Raises:
        UnknownSessionError: no such session.
    """
    row = ledger.session(session_id).status
    recorded = lifecycle(ledger, session_id)
    if not recorded.held:
        return row
    if recorded.open and ledger.lock_holder(session_id) is not None:
        return recorded.status(running=row == ACTIVE)
    return recorded.status(running=False)


ANSWERED = "answered"
RUNNING = "running"
SHOWN_STATUSES = (ANSWERED, RUNNING, FINISHED, FAILED, INTERRUPTED, ACTIVE)
"""What `--status` takes: the statuses people read, and `active` (the indexed name of both
`answered` and `running`)."""


def shows_as(shown: str, asked: str) -> bool:
    """Whether a session shown as `shown` is one `--status asked` asks for."""
    return asked == shown or (asked == ACTIVE and shown in (ANSWERED, RUNNING))


def shown_status(ledger: Ledger, info: SessionInfo) -> str:
    """The status a person reads: `answered` (its last turn ended with an answer, nothing runs),
    `running` (a live process runs its turn), `finished`, `failed` or `interrupted`.

    `active`, the indexed and JSON name, covers both of the first two. Only an `active` row is
    derived again: a row is left finished, failed or interrupted only by a holder that derived
    it, and a new turn makes it `active` before its message is recorded.
    """
    if info.status != ACTIVE:
        return info.status
    recorded = lifecycle(ledger, info.id)
    if not recorded.held:
        return ANSWERED if info.status == ACTIVE else info.status
    running = recorded.open and ledger.lock_holder(info.id) is not None and info.status == ACTIVE
    status = recorded.status(running=running)
    if status != ACTIVE:
        return status
    return RUNNING if recorded.open else ANSWERED


def index_status(ledger: Ledger, session_id: str, *, running: bool) -> str:
    """Write the derived status to the row (the lock holder does, at each lifecycle point).

    Args:
        running: this process is running the session's open turn right now.
    """
    recorded = lifecycle(ledger, session_id, strict=True)
    return _index(ledger, session_id, recorded.status(running=running))


def index_running(ledger: Ledger, session_id: str) -> str:
    """A turn starts: the session is `active` until it ends (a new turn reopens a finished
    one before its message is recorded, so finish_call in it is seen afresh)."""
    return _index(ledger, session_id, ACTIVE)


def _index(ledger: Ledger, session_id: str, status: str) -> str:
    if ledger.session(session_id).status != status:
        ledger.set_status(session_id, status)
    return status


def with_status(ledger: Ledger, info: SessionInfo) -> SessionInfo:
    """The session row as readers show it: with its derived status (`session_status`;
    `damaged` when one of its entries does not decode)."""
    return dataclasses.replace(info, status=session_status(ledger, info.id))


def with_shown_status(ledger: Ledger, info: SessionInfo) -> SessionInfo:
    """The session row with the status a person reads (`shown_status`)."""
    return dataclasses.replace(info, status=shown_status(ledger, info))


def reindex(ledger: Ledger, session_id: str) -> None:
    """Index the derived status under the session's lock, as every opener does (a resume that
    shows a finished session without opening it); a live holder is left to keep its own.
    Nothing is taken (nor recorded) when the index is current."""
    if ledger.session(session_id).status == session_status(ledger, session_id):
        return
    try:
        ledger.acquire_lock(session_id)
    except ComalError:
        return
    try:
        index_status(ledger, session_id, running=False)
    finally:
        ledger.release_lock(session_id)
