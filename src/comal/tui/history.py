"""What a resumed session looked like: the ledger's recent history as transcript items.

A pure view of ledger entries (no I/O): user messages, assistant text, tool receipts,
projections and checkpoints, oldest first, the last `limit` of them. Reopening a session with
`comal --resume UUID` shows these above the new turn, so people see where they left off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.agent.core.tool_runner import call_summary
from comal.ledger.entry import Entry
from comal.ledger.records import (
    AssistantMessage,
    CheckpointRecord,
    ProjectionRecord,
    ToolResult,
    ToolStarted,
    UserMessage,
)
from comal.messages import ToolCallPart, message_from_json
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


def _message_text(entry: Entry) -> str:
    record = UserMessage if entry.kind == "message.user" else AssistantMessage
    raw = record.from_entry(entry).message
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
    receipt = ToolStarted.from_entry(started)
    if receipt.call_id is None or receipt.name is None:
        return None
    return call_summary(ToolCallPart(receipt.call_id, receipt.name, receipt.arguments))


def past_items(entries: Sequence[Entry], limit: int = PAST_ITEMS_LIMIT) -> tuple[PastItem, ...]:
    """The last `limit` transcript items of a session's entries, oldest first."""
    pairing = pair(entries)
    items: list[PastItem] = []
    for entry in entries:
        if entry.kind == "message.user":
            items.append(PastItem("user", _message_text(entry)))
        elif entry.kind == "message.assistant":
            text = _message_text(entry)
            if AssistantMessage.from_entry(entry).finish == "refusal":
                items.append(PastItem("refused", text))
            elif text.strip():
                items.append(PastItem("assistant", text))
        elif entry.kind == "tool.result":
            result = ToolResult.from_entry(entry)
            summary = _started_summary(pairing.site_of(entry)) or str(result.name)
            line = tool_line(str(result.status), result.exit_code, result.size_bytes or 0)
            items.append(PastItem("tool", f"{summary} — {line}", result.status != "ok"))
        elif entry.kind == "checkpoint":
            cp = CheckpointRecord.from_entry(entry)
            items.append(PastItem("context", f"checkpoint #{cp.number} · {cp.title}"))
        elif entry.kind == "projection":
            count = len(ProjectionRecord.from_entry(entry).call_ids)
            items.append(PastItem("context", f"projection · {count} result(s) became references"))
    return tuple(items[-limit:])
