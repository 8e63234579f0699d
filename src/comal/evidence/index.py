"""The evidence index: every tool result of a session, oldest first, readable with EvidenceRead.

`EvidenceRead {"ref":"index"}` pages through one line per `tool.result` of the reading session:
its exact ref, the tool and main argument, size, exit code, status and digest. Checkpoints print
that exact call, so every recorded output stays reachable from active memory by exact calls
(the index, then the ref it lists), however many results the checkpoint itself names. `search`
works on the index like on any evidence (find the call that produced something by tool name,
path or command).

Invariants: built only from ledger entries, in ledger order (the same ledger gives the same
text); it lists only the reading session's own results, so it never widens access.
"""

from __future__ import annotations

from comal.context.relief.workstate import collect_calls, describe_call
from comal.ledger.entry import Entry
from comal.ledger.records import Kind, ToolResult
from comal.ledger.store import Ledger


def index_line(entry: Entry, what: str) -> str:
    """One result as the index (and a checkpoint's evidence list) writes it."""
    result = ToolResult.from_entry(entry)
    size = result.size_bytes or 0
    exit_code = result.exit_code
    status = result.status
    exit_note = f" · exit {exit_code}" if exit_code is not None else ""
    quiet = ("ok", "error") if exit_code is not None else ("ok",)
    status_note = "" if status in quiet or status is None else f" · {status}"
    digest = result.digest
    digest_note = f" · {digest[:19]}" if digest is not None else ""
    return f"{entry.id} · {what} · {size:,} bytes{exit_note}{status_note}{digest_note}"


def index_text(ledger: Ledger, session_id: str) -> str:
    """The index of `session_id`'s tool results, oldest first (see module docstring)."""
    entries = ledger.entries(session_id)
    calls = collect_calls(entries)
    lines: list[str] = []
    for entry in entries:
        if entry.kind != Kind.TOOL_RESULT:
            continue
        result = ToolResult.from_entry(entry)
        call = calls.get(entry.id)
        what = (
            describe_call(call.name, call.arguments, 120)
            if call is not None
            else ("tool" if result.name is None else result.name)
        )
        lines.append(f"E{len(lines) + 1}. {index_line(entry, what)}")
    if not lines:
        return "(no tool results recorded in this session)"
    return "\n".join(lines)
