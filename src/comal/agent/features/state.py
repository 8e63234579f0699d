"""The `/state` view of a session, computed purely from its ledger entries.

`open_calls(entries)` is also what recovery works from: resume state is read from the data
(dangling `tool.started` receipts, calls never started), never kept in a flag. Everything here
is a pure function of the entries plus, for `session_state`, the session row and its lock.

Calls are paired by `context.view.pairing`, the rule the conversation view and the work state
use: a `tool.result` (or `tool.started`) belongs to the most recent assistant message still
waiting on its call id, so providers that reuse call ids across turns are handled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from comal.context.relief.recorded import checkpoints
from comal.ledger.entry import Entry
from comal.ledger.locks import LockInfo
from comal.ledger.records import (
    AssistantMessage,
    BoardUpdated,
    ChildReceipt,
    ProviderRequest,
    ResponseDiscarded,
    SessionFinished,
    SessionStarted,
    ToolResult,
)
from comal.ledger.records import fields as f
from comal.ledger.store import Ledger
from comal.messages import JSONObject, JSONValue, ToolCallPart, message_from_json
from comal.session.cost import SessionCost, cost_json, render_cost, session_cost
from comal.session.pairing import pair
from comal.session.status import FINISHED, session_status
from comal.session.status import RECEIPT_KIND as RECEIPT_KIND
from comal.tools.board import Criterion, board_is_open, criteria_from_json, render_board
from comal.tools.plugin import RecordedCall
from comal.usage import Price, Usage


def recorded_calls(entries: Sequence[Entry]) -> tuple[RecordedCall, ...]:
    """Calls with a result, in result order: name, arguments, status and `observed`."""
    pairing = pair(entries)
    out: list[RecordedCall] = []
    for entry in entries:
        if entry.kind != "tool.result":
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


@dataclass(frozen=True, slots=True)
class OpenCall:
    """A tool call of a recorded assistant message that has no result yet."""

    call: ToolCallPart
    started: Entry | None
    """Its `tool.started` receipt, or None when it never started (no effect can have run)."""


@dataclass(frozen=True, slots=True)
class UncertainCall:
    """A call whose result is `uncertain`: never re-run without explicit permission."""

    call_id: str
    name: str
    arguments: JSONObject
    result_id: str
    detail: str


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Token usage over the session: measured by the provider, and estimated where not."""

    requests: int
    measured_responses: int
    """Responses whose provider reported input usage."""
    measured: Usage
    """Sum of the reported usage (None fields: never reported)."""
    estimated_input_tokens: int
    """Comal's own estimate for requests with no measured input (killed, failed, unreported)."""


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


def _assistant_text(entry: Entry) -> str | None:
    raw = AssistantMessage.from_entry(entry).message
    if raw is None:
        return None
    try:
        return message_from_json(raw).text
    except (ValueError, KeyError):
        return None


def _superseded(entries: Sequence[Entry]) -> set[str]:
    discarded = (ResponseDiscarded.from_entry(e) for e in entries if e.kind == "response.discarded")
    return {d.entry for d in discarded if d.entry}


def open_calls(entries: Sequence[Entry]) -> tuple[OpenCall, ...]:
    """Calls of recorded assistant messages without a result, in ledger order."""
    return tuple(
        OpenCall(site.call, site.started)
        for site in pair(entries).sites
        if site.message is not None and site.result is None
    )


def board_of(entries: Sequence[Entry]) -> tuple[Criterion, ...]:
    """The board as of the latest `board.updated` entry."""
    for entry in reversed(entries):
        if entry.kind == "board.updated":
            return criteria_from_json(list(BoardUpdated.from_entry(entry).criteria))
    return ()


def uncertain_calls(entries: Sequence[Entry]) -> tuple[UncertainCall, ...]:
    """Every `uncertain` result, with the call's arguments from its `tool.started` receipt."""
    pairing = pair(entries)
    out: list[UncertainCall] = []
    for entry in entries:
        if entry.kind != "tool.result":
            continue
        result = ToolResult.from_entry(entry)
        if result.status == "uncertain":
            detail = f.text(result.observed or {}, "detail")
            out.append(
                UncertainCall(
                    result.call_id or "",
                    result.name or "",
                    pairing.ran_arguments(entry),
                    entry.id,
                    detail,
                )
            )
    return tuple(out)


def final_answer(entries: Sequence[Entry]) -> str | None:
    """The answer of the latest `session.finished` entry."""
    for entry in reversed(entries):
        if entry.kind == "session.finished":
            return SessionFinished.from_entry(entry).answer
    return None


def last_answer(entries: Sequence[Entry]) -> str | None:
    """The text of the latest recorded assistant message (None when it was a refusal)."""
    superseded = _superseded(entries)
    for entry in reversed(entries):
        if entry.kind == "message.assistant" and entry.id not in superseded:
            refused = AssistantMessage.from_entry(entry).finish == "refusal"
            return None if refused else _assistant_text(entry)
    return None


def usage_totals(entries: Sequence[Entry]) -> UsageTotals:
    """Measured usage summed over responses; Comal's estimate for requests without one."""
    estimates: dict[str, int] = {}
    measured = Usage()
    measured_requests: set[str] = set()
    count = 0
    for entry in entries:
        if entry.kind == "provider.request":
            value = ProviderRequest.from_entry(entry).estimated_input_tokens
            estimates[entry.id] = value or 0
        elif entry.kind in ("message.assistant", "response.discarded"):
            reply = (
                AssistantMessage if entry.kind == "message.assistant" else ResponseDiscarded
            ).from_entry(entry)
            usage = Usage() if reply.usage is None else Usage.from_json(reply.usage)
            measured = measured + usage
            if usage.new_input is not None:
                count += 1
                measured_requests.add(reply.request_entry or "")
    estimated = sum(v for k, v in estimates.items() if k not in measured_requests)
    return UsageTotals(len(estimates), count, measured, estimated)


def _child_summary(ledger: Ledger, child_id: str) -> ChildSummary:
    info = ledger.session(child_id)
    entries = ledger.entries(child_id)
    receipts = [e for e in entries if e.kind == RECEIPT_KIND]
    started = next((e for e in entries if e.kind == "session.started"), None)
    origin = SessionStarted.from_entry(started).origin if started is not None else None
    return ChildSummary(
        child_id,
        session_status(ledger, child_id),
        ChildReceipt.from_entry(receipts[-1]).status if receipts else None,
        None if origin is None else f.text_or_none(origin, "parent_call"),
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
        evidence_count=sum(1 for e in entries if e.kind == "tool.result"),
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
