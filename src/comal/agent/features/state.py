"""The `/state` view of a session, computed purely from its ledger entries.

It gathers the session's facts (`comal.session`: open and uncertain calls, answers, usage,
cost, status) with what the layers above know of it: the board (`tools.board`), the latest
checkpoint (`context`), the calls a plugin's recovery reads (`recorded_calls`) and the direct
children. Everything here is a pure function of the entries plus, for `session_state`, the
session row and its lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from comal.context.relief.recorded import checkpoints
from comal.ledger.entry import Entry
from comal.ledger.locks import LockInfo
from comal.ledger.records import (
    BoardUpdated,
    ChildReceiptRecord,
    Kind,
    SessionStarted,
    ToolResult,
)
from comal.ledger.store import Ledger
from comal.messages import JSONObject, JSONValue
from comal.session import (
    FINISHED,
    OpenCall,
    SessionCost,
    UncertainCall,
    UsageTotals,
    cost_json,
    final_answer,
    last_answer,
    open_calls,
    pair,
    render_cost,
    session_cost,
    session_status,
    uncertain_calls,
    usage_totals,
)
from comal.session import RECEIPT_KIND as RECEIPT_KIND
from comal.tools.board import Criterion, board_is_open, criteria_from_json, render_board
from comal.tools.plugin import RecordedCall
from comal.usage import Price, Usage


def recorded_calls(entries: Sequence[Entry]) -> tuple[RecordedCall, ...]:
    """Calls with a result, in result order: name, arguments, status and `observed`."""
    pairing = pair(entries)
    out: list[RecordedCall] = []
    for entry in entries:
        if entry.kind != Kind.TOOL_RESULT:
            continue
        result = ToolResult.from_entry(entry)
        if result.call_id is None:
            continue
        out.append(
            RecordedCall(
                result.call_id,
                result.name or "",
                pairing.ran_arguments(entry),
                result.status or "",
                result.observed or {},
            )
        )
    return tuple(out)


def board_of(entries: Sequence[Entry]) -> tuple[Criterion, ...]:
    """The board as of the latest `board.updated` entry."""
    for entry in reversed(entries):
        if entry.kind == Kind.BOARD_UPDATED:
            return criteria_from_json(list(BoardUpdated.from_entry(entry).criteria))
    return ()


@dataclass(frozen=True, slots=True)
class ChildSummary:
    """One direct child of a session, as `/state` lists it."""

    id: str
    status: str
    """The session row's status."""
    receipt: str | None
    """The receipt's status (`finished`, `budget_exhausted`, `failed`); None: no receipt yet."""
    parent_call: str | None
    title: str
    usage: UsageTotals


@dataclass(frozen=True, slots=True)
class SessionState:
    """What `/state` and `comal state` show."""

    id: str
    status: str
    title: str
    cwd: str
    model: str
    lock: LockInfo | None
    board: tuple[Criterion, ...]
    pending: tuple[OpenCall, ...]
    uncertain: tuple[UncertainCall, ...]
    last_checkpoint: tuple[int, str, str] | None
    """(number, title, entry id) of the latest checkpoint."""
    evidence_count: int
    usage: UsageTotals
    cost: SessionCost
    final_answer: str | None
    """The answer recorded by a successful finish_call (status `finished`)."""
    last_answer: str | None
    """The last assistant text, whatever the status."""
    children: tuple[ChildSummary, ...] = ()

    @property
    def plan_open(self) -> bool:
        """True when the board has pending or in-progress criteria."""
        return board_is_open(self.board)


def _child_summary(ledger: Ledger, child_id: str) -> ChildSummary:
    info = ledger.session(child_id)
    entries = ledger.entries(child_id)
    receipts = [e for e in entries if e.kind == RECEIPT_KIND]
    started = next((e for e in entries if e.kind == Kind.SESSION_STARTED), None)
    origin = SessionStarted.from_entry(started).origin if started is not None else None
    return ChildSummary(
        child_id,
        session_status(ledger, child_id),
        ChildReceiptRecord.from_entry(receipts[-1]).status if receipts else None,
        None if origin is None else origin.parent_call,
        info.title,
        usage_totals(entries),
    )


def session_state(
    ledger: Ledger, session_id: str, prices: Mapping[str, Price] | None = None
) -> SessionState:
    """The state of one session, read from the ledger (`prices`: the configured ones).

    Raises:
        UnknownSessionError: no such session.
    """
    info = ledger.session(session_id)
    status = session_status(ledger, session_id)
    entries = ledger.entries(session_id)
    latest = checkpoints(entries)
    cp = latest[-1] if latest else None
    return SessionState(
        id=info.id,
        status=status,
        title=info.title,
        cwd=info.cwd,
        model=info.model,
        lock=ledger.lock_holder(session_id),
        board=board_of(entries),
        pending=open_calls(entries),
        uncertain=uncertain_calls(entries),
        last_checkpoint=None if cp is None else (cp.number, cp.title, cp.entry_id),
        evidence_count=sum(1 for e in entries if e.kind == Kind.TOOL_RESULT),
        usage=usage_totals(entries),
        cost=session_cost(entries, prices or {}),
        final_answer=final_answer(entries) if status == FINISHED else None,
        last_answer=last_answer(entries),
        children=tuple(_child_summary(ledger, c) for c in ledger.children(session_id)),
    )


def _usage_json(usage: Usage) -> JSONObject:
    return usage.to_json()


def state_to_json(state: SessionState) -> JSONObject:
    """The documented JSON shape of `comal state --json`."""
    lock: JSONValue = None
    if state.lock is not None:
        lock = {
            "pid": state.lock.pid,
            "host": state.lock.host,
            "acquired_at": state.lock.acquired_at,
        }
    cp = state.last_checkpoint
    return {
        "id": state.id,
        "status": state.status,
        "title": state.title,
        "cwd": state.cwd,
        "model": state.model,
        "lock": lock,
        "board": [
            {"id": c.id, "text": c.text, "status": c.status, "check": c.check} for c in state.board
        ],
        "plan_open": state.plan_open,
        "pending_calls": [
            {
                "call_id": p.call.call_id,
                "name": p.call.name,
                "arguments": p.call.arguments,
                "started": p.started is not None,
            }
            for p in state.pending
        ],
        "uncertain_calls": [
            {
                "call_id": u.call_id,
                "name": u.name,
                "arguments": u.arguments,
                "result": u.result_id,
                "detail": u.detail,
            }
            for u in state.uncertain
        ],
        "last_checkpoint": None
        if cp is None
        else {"number": cp[0], "title": cp[1], "entry": cp[2]},
        "evidence_count": state.evidence_count,
        "usage": {
            "requests": state.usage.requests,
            "measured_responses": state.usage.measured_responses,
            "measured": _usage_json(state.usage.measured),
            "estimated_input_tokens": state.usage.estimated_input_tokens,
        },
        "cost": cost_json(state.cost),
        "final_answer": state.final_answer,
        "last_answer": state.last_answer,
        "children": [
            {
                "id": c.id,
                "status": c.status,
                "receipt": c.receipt,
                "parent_call": c.parent_call,
                "title": c.title,
                "requests": c.usage.requests,
                "measured": _usage_json(c.usage.measured),
                "estimated_input_tokens": c.usage.estimated_input_tokens,
            }
            for c in state.children
        ],
    }


def _tokens(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def render_state(state: SessionState) -> str:
    """The plain-text `/state` view."""
    lock = "free"
    if state.lock is not None:
        lock = f"held by pid {state.lock.pid} on {state.lock.host}"
    lines = [
        f"session {state.id} · {state.status}" + (f" · {state.title}" if state.title else ""),
        f"cwd {state.cwd} · model {state.model or 'unknown'} · lock {lock}",
        "board:" + ("" if state.board else " (empty)"),
    ]
    if state.board:
        lines += [f"  {line}" for line in render_board(state.board).splitlines()]
    lines.append(f"pending calls: {len(state.pending)}")
    for p in state.pending:
        how = "started, no result" if p.started is not None else "not started"
        lines.append(f"  {p.call.name} {p.call.call_id}: {how}")
    lines.append(f"uncertain calls: {len(state.uncertain)}")
    for doubt in state.uncertain:
        lines.append(
            f"  {doubt.name} {doubt.call_id} · {doubt.result_id}: {doubt.detail or 'uncertain'}"
        )
    cp = state.last_checkpoint
    lines.append("last checkpoint: " + ("none" if cp is None else f"#{cp[0]} {cp[1]} · {cp[2]}"))
    lines.append(f"evidence: {state.evidence_count} stored outputs")
    u = state.usage
    m = u.measured
    counted = "all" if u.measured_responses == u.requests else str(u.measured_responses)
    uncounted = (
        f" · ~{u.estimated_input_tokens:,} input tokens estimated where the server gave no count"
        if u.estimated_input_tokens
        else ""
    )
    lines.append(
        f"usage: {_count(u.requests, 'request')} ({counted} counted by the server) · input new"
        f" {_tokens(m.new_input)}, cache read {_tokens(m.cache_read)}, cache write"
        f" {_tokens(m.cache_write)}, output {_tokens(m.output)}, reasoning"
        f" {_tokens(m.reasoning)}{uncounted}"
    )
    lines.append(f"children: {len(state.children)}")
    for c in state.children:
        cm = c.usage.measured
        lines.append(
            f"  {c.id} · {c.status} · receipt {c.receipt or 'none yet'} · call"
            f" {c.parent_call or '?'} · {_count(c.usage.requests, 'request')} · input"
            f" {_tokens(cm.total_input)}, output {_tokens(cm.output)}"
            + (f" · {c.title}" if c.title else "")
        )
    lines.append(render_cost(state.cost))
    if state.final_answer is not None:
        lines.append(f"final answer: {state.final_answer}")
    return "\n".join(lines)
