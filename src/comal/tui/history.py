"""What a resumed session looked like: the ledger's recent history as transcript items.

A pure view of ledger entries (no I/O): user messages, assistant text, tool receipts,
projections and checkpoints, oldest first, the last `limit` of them. Reopening a session with
`comal --resume UUID` shows these above the new turn, so people see where they left off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.agent.tool_runner import call_summary
from comal.context.view.pairing import CallSite, pair
from comal.ledger.entry import Entry
from comal.messages import ToolCallPart, message_from_json

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
    raw = entry.payload.get("message")
    if not isinstance(raw, dict):
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
    call_id, name, args = (started.payload.get(k) for k in ("call_id", "name", "arguments"))
    if not isinstance(call_id, str) or not isinstance(name, str):
        return None
    return call_summary(ToolCallPart(call_id, name, args if isinstance(args, dict) else {}))


def past_items(entries: Sequence[Entry], limit: int = PAST_ITEMS_LIMIT) -> tuple[PastItem, ...]:
    """The last `limit` transcript items of a session's entries, oldest first."""
    pairing = pair(entries)
    items: list[PastItem] = []
    for entry in entries:
        p = entry.payload
        if entry.kind == "message.user":
            items.append(PastItem("user", _message_text(entry)))
        elif entry.kind == "message.assistant":
            text = _message_text(entry)
            if p.get("finish") == "refusal":
                items.append(PastItem("refused", text))
            elif text.strip():
                items.append(PastItem("assistant", text))
        elif entry.kind == "tool.result":
            name, status = p.get("name"), p.get("status")
            code, size = p.get("exit_code"), p.get("size_bytes")
            summary = _started_summary(pairing.site_of(entry)) or str(name)
            line = tool_line(
                str(status),
                code if isinstance(code, int) else None,
                size if isinstance(size, int) else 0,
            )
            items.append(PastItem("tool", f"{summary} — {line}", status != "ok"))
        elif entry.kind == "checkpoint":
            items.append(PastItem("context", f"checkpoint #{p.get('number')} · {p.get('title')}"))
        elif entry.kind == "projection":
            ids = p.get("call_ids")
            count = len(ids) if isinstance(ids, list) else 0
            items.append(PastItem("context", f"projection · {count} result(s) became references"))
    return tuple(items[-limit:])
