"""Child sessions' tasks and receipts, and how a coordinator's call finds its children.

A child's id is derived from (coordinator id, call id, key), so every resume of the coordinator
finds the same child; an imported sub-agent is found by the `origin.parent_call` its importer
recorded. A receipt (`child.receipt`) is the child's exact result: the answer verbatim, the
status, the usage, the refs of its results; `ChildReceipt.render` is what the coordinator reads.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from comal.errors import UnknownSessionError
from comal.ledger.entry import Entry
from comal.ledger.records import ChildOrigin, ChildReceiptRecord, ImportOrigin, Kind, SessionStarted
from comal.ledger.records import fields as f
from comal.ledger.store import Ledger
from comal.session import RECEIPT_KIND
from comal.usage import Usage

_NAMESPACE = uuid.UUID("6f1c1f43-5b0e-4a57-9c6b-8d4f3f0e2a11")


@dataclass(frozen=True, slots=True)
class ChildTask:
    """What one child is asked to do."""

    kind: str
    """`task`, `step` or `draft` (how the task message ends)."""
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    """Tool names to offer; None: the coordinator's read-only tools."""
    max_turns: int | None = None
    max_tokens: int | None = None
    key: str = ""
    """Tells apart several children of one call (a WorkDraft fragment id)."""


@dataclass(frozen=True, slots=True)
class ChildReceipt:
    """A child's exact result, as recorded in its `child.receipt` entry."""

    session_id: str
    call_id: str
    status: str
    """`finished`, `budget_exhausted` or `failed`."""
    answer: str
    reason: str
    usage: Usage
    requests: int
    evidence: tuple[tuple[str, str], ...]
    """(ref, tool) of every result the child recorded, oldest first."""
    rebuilt: bool = False
    """True when read back from the ledger instead of produced by this run."""

    def to_record(self) -> ChildReceiptRecord:
        """The `child.receipt` record."""
        return ChildReceiptRecord(
            self.call_id,
            self.status,
            self.answer,
            self.reason,
            self.usage.to_json(),
            self.requests,
            tuple({"ref": ref, "tool": tool} for ref, tool in self.evidence),
        )

    @classmethod
    def from_entry(cls, entry: Entry) -> ChildReceipt:
        """The receipt a `child.receipt` entry holds (marked rebuilt)."""
        p = ChildReceiptRecord.from_entry(entry)
        return cls(
            entry.session_id,
            p.call_id,
            p.status or "failed",
            p.answer,
            p.reason,
            Usage() if p.usage is None else Usage.from_json(p.usage),
            p.requests,
            tuple((f.text(item, "ref"), f.text(item, "tool")) for item in p.evidence),
            rebuilt=True,
        )

    @property
    def finished(self) -> bool:
        """True when the child answered within its budget."""
        return self.status == "finished"

    def header(self) -> str:
        """One line: child id, status, model calls, tokens."""
        tokens_in = self.usage.total_input
        tokens_out = self.usage.output
        usage = (
            "usage unknown"
            if tokens_in is None and tokens_out is None
            else f"{tokens_in or 0:,} input + {tokens_out or 0:,} output tokens"
        )
        return f"child {self.session_id} · {self.status} · {self.requests} model calls · {usage}"

    def render(self) -> str:
        """The receipt as the coordinator reads it: header, reason, evidence refs, answer."""
        lines = [self.header()]
        if self.reason:
            lines.append(f"stopped: {self.reason}")
        if self.evidence:
            refs = ", ".join(f"{ref} ({tool})" for ref, tool in self.evidence)
            lines.append(f"evidence (EvidenceRead): {refs}")
        lines.append("answer:")
        lines.append(self.answer)
        return "\n".join(lines)


def child_session_id(parent_id: str, call_id: str, key: str = "", occurrence: int = 0) -> str:
    """The id of the child a call starts: the same on every resume of the coordinator.

    `occurrence` (`pairing.call_occurrence`) tells apart calls of different turns that reuse
    one id; the first use keeps the id such calls always had.
    """
    name = f"{parent_id}\x00{call_id}\x00{key}"
    if occurrence:
        name += f"\x00{occurrence}"
    return str(uuid.uuid5(_NAMESPACE, name))


def _origin(ledger: Ledger, session_id: str) -> ImportOrigin | ChildOrigin | None:
    started = ledger.entries(session_id, kinds=(Kind.SESSION_STARTED,))
    return SessionStarted.from_entry(started[0]).origin if started else None


def find_child(
    ledger: Ledger, parent_id: str, call_id: str, key: str = "", occurrence: int = 0
) -> str | None:
    """The child session of `call_id` (its `occurrence`): Comal's derived id, else an imported
    child linked to that call by `origin.parent_call`."""
    derived = child_session_id(parent_id, call_id, key, occurrence)
    try:
        ledger.session(derived)
        return derived
    except UnknownSessionError:
        pass
    if key or occurrence:
        return None
    for child in ledger.children(parent_id):
        origin = _origin(ledger, child)
        if origin is not None and origin.parent_call == call_id:
            return child
    return None


def recorded_receipt(ledger: Ledger, session_id: str) -> ChildReceipt | None:
    """The receipt a child recorded, if it has one."""
    found = ledger.entries(session_id, kinds=(RECEIPT_KIND,))
    return ChildReceipt.from_entry(found[-1]) if found else None
