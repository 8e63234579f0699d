"""What a resumed session looked like: the ledger's recent history as transcript items.

A pure view of ledger entries (no I/O): user messages, assistant text, tool receipts,
projections and checkpoints, oldest first, the last `limit` of them. Reopening a session with
`comal --resume UUID` shows these above the new turn, so people see where they left off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from comal.agent.core.tool_runner import call_summary
from comal.ledger.entry import Entry
from comal.ledger.records import (
    AssistantMessage,
    BoardUpdated,
    CheckpointRecord,
    ChildReceiptRecord,
    CompactCancelled,
    CompactRequested,
    ContextCalibrated,
    HookRun,
    LockAcquired,
    LockReclaimed,
    PressureDeferred,
    ProjectionRecord,
    ProviderErrorRecord,
    ProviderRequest,
    ProviderResent,
    ResponseDiscardedRecord,
    SessionConfigured,
    SessionFinished,
    SessionForked,
    SessionMoved,
    SessionPlugins,
    SessionResumed,
    SessionRewound,
    SessionStarted,
    SessionTools,
    SummaryMessage,
    ToolResult,
    ToolStartedRecord,
    UserMessage,
    UserShell,
    WarningRecord,
    record_of,
)
from comal.messages import JSONObject, ToolCallPart, message_from_json
from comal.session import CallSite, pair

PAST_ITEMS_LIMIT = 60
"""How many past items a resumed transcript shows (the ledger keeps them all)."""


@dataclass(frozen=True, slots=True)
class PastItem:
    """One line of recorded history."""

    kind: str
    """`user`, `assistant`, `refused` (a reply that declined), `tool` or `context`."""
    text: str
    failed: bool = False
    """For `tool`: the receipt was an error, a denial or uncertain."""


def _message_text(raw: JSONObject | None) -> str:
    if raw is None:
        return ""
    try:
        return message_from_json(raw).text
    except (ValueError, KeyError):
        return ""


def tool_line(status: str, exit_code: int | None, size_bytes: int) -> str:
    """`status · exit N · size` as the transcript shows a finished call."""
    code = "" if exit_code is None else f" · exit {exit_code}"
    return f"{status}{code} · {size_bytes:,} bytes"


def _started_summary(site: CallSite | None) -> str | None:
    """How the receipt of the call a result answers describes it (None: no receipt)."""
    started = site.started if site is not None else None
    if started is None:
        return None
    receipt = ToolStartedRecord.from_entry(started)
    if receipt.call_id is None or receipt.name is None:
        return None
    return call_summary(ToolCallPart(receipt.call_id, receipt.name, receipt.arguments))


def past_items(entries: Sequence[Entry], limit: int = PAST_ITEMS_LIMIT) -> tuple[PastItem, ...]:
    """The last `limit` transcript items of a session's entries, oldest first."""
    pairing = pair(entries)
    items: list[PastItem] = []
    for entry in entries:
        match record_of(entry):
            case UserMessage(message=raw):
                items.append(PastItem("user", _message_text(raw)))
            case AssistantMessage(message=raw, finish=finish):
                text = _message_text(raw)
                if finish == "refusal":
                    items.append(PastItem("refused", text))
                elif text.strip():
                    items.append(PastItem("assistant", text))
            case ToolResult() as result:
                summary = _started_summary(pairing.site_of(entry)) or str(result.name)
                line = tool_line(str(result.status), result.exit_code, result.size_bytes or 0)
                items.append(PastItem("tool", f"{summary} — {line}", result.status != "ok"))
            case CheckpointRecord(number=number, title=title):
                items.append(PastItem("context", f"checkpoint #{number} · {title}"))
            case ProjectionRecord(call_ids=call_ids):
                count = len(call_ids)
                items.append(
                    PastItem("context", f"projection · {count} result(s) became references")
                )
            case (
                SessionStarted()
                | SessionTools()
                | SessionPlugins()
                | SummaryMessage()
                | ProviderRequest()
                | ProviderResent()
                | ProviderErrorRecord()
                | ResponseDiscardedRecord()
                | ToolStartedRecord()
                | PressureDeferred()
                | ContextCalibrated()
                | BoardUpdated()
                | CompactRequested()
                | CompactCancelled()
                | LockAcquired()
                | LockReclaimed()
                | SessionConfigured()
                | SessionForked()
                | SessionRewound()
                | HookRun()
                | UserShell()
                | SessionFinished()
                | SessionResumed()
                | SessionMoved()
                | WarningRecord()
                | ChildReceiptRecord()
                | None  # a kind a newer Comal wrote
            ):
                pass
            case unknown:
                assert_never(unknown)
    return tuple(items[-limit:])
