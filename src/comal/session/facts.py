"""A session's facts, each a pure function of its ledger entries.

`open_calls(entries)` is what recovery works from: resume state is read from the data
(dangling `tool.started` receipts, calls never started), never kept in a flag. The calls still
open, the uncertain results, the final and the last answer, and the usage measured and
estimated are read here for `/state`, recovery, child sessions and the front ends.

Calls are paired by `pairing`, the rule the conversation view and the work state use: a
`tool.result` (or `tool.started`) belongs to the most recent assistant message still waiting on
its call id, so providers that reuse call ids across turns are handled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.ledger.entry import Entry
from comal.ledger.records import (
    AssistantMessage,
    Kind,
    ProviderRequest,
    ResponseDiscardedRecord,
    SessionFinished,
    ToolResult,
)
from comal.ledger.records import fields as f
from comal.messages import JSONObject, ToolCallPart, message_from_json
from comal.session.pairing import pair
from comal.usage import Usage


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


def _assistant_text(entry: Entry) -> str | None:
    raw = AssistantMessage.from_entry(entry).message
    if raw is None:
        return None
    try:
        return message_from_json(raw).text
    except (ValueError, KeyError):
        return None


def _superseded(entries: Sequence[Entry]) -> set[str]:
    discarded = (
        ResponseDiscardedRecord.from_entry(e) for e in entries if e.kind == Kind.RESPONSE_DISCARDED
    )
    return {d.entry for d in discarded if d.entry}


def open_calls(entries: Sequence[Entry]) -> tuple[OpenCall, ...]:
    """Calls of recorded assistant messages without a result, in ledger order."""
    return tuple(
        OpenCall(site.call, site.started)
        for site in pair(entries).sites
        if site.message is not None and site.result is None
    )


def uncertain_calls(entries: Sequence[Entry]) -> tuple[UncertainCall, ...]:
    """Every `uncertain` result, with the call's arguments from its `tool.started` receipt."""
    pairing = pair(entries)
    out: list[UncertainCall] = []
    for entry in entries:
        if entry.kind != Kind.TOOL_RESULT:
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
        if entry.kind == Kind.SESSION_FINISHED:
            return SessionFinished.from_entry(entry).answer
    return None


def last_answer(entries: Sequence[Entry]) -> str | None:
    """The text of the latest recorded assistant message (None when it was a refusal)."""
    superseded = _superseded(entries)
    for entry in reversed(entries):
        if entry.kind == Kind.MESSAGE_ASSISTANT and entry.id not in superseded:
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
        if entry.kind == Kind.PROVIDER_REQUEST:
            value = ProviderRequest.from_entry(entry).estimated_input_tokens
            estimates[entry.id] = value or 0
        elif entry.kind in (Kind.MESSAGE_ASSISTANT, Kind.RESPONSE_DISCARDED):
            reply = (
                AssistantMessage
                if entry.kind == Kind.MESSAGE_ASSISTANT
                else ResponseDiscardedRecord
            ).from_entry(entry)
            usage = Usage() if reply.usage is None else Usage.from_json(reply.usage)
            measured = measured + usage
            if usage.new_input is not None:
                count += 1
                measured_requests.add(reply.request_entry or "")
    estimated = sum(v for k, v in estimates.items() if k not in measured_requests)
    return UsageTotals(len(estimates), count, measured, estimated)
