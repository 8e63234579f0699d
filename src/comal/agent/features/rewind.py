"""Restore points: rewind a session's files and conversation to an earlier point of its ledger.

Invariants:
- Files come back byte for byte from the ledger: every Write/Edit records, before it touches
  the file, the exact bytes it read (the `tool.started` body) and the digests before and
  intended. The state of a file at a point is the "before" of the first change after it.
- A file whose current digest is not the one this session's last change (or last rewind) left
  is refused, with a summary of the difference, unless forced: Comal never overwrites work it
  did not do without being told to.
- Changes made by Bash or MCP tools cannot be known, so they are listed as not restorable.
- The rewind is itself an entry (`session.rewound`); nothing is deleted. A conversation rewind
  makes the history leave out what it went back over (`ledger/history.py`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from comal.errors import LedgerError, RewindError, ToolError
from comal.ledger.entry import Entry
from comal.ledger.history import REWOUND_KIND
from comal.ledger.records import (
    CheckpointRecord,
    Kind,
    SessionRewound,
    ToolResult,
    ToolStartedRecord,
    UserMessage,
)
from comal.ledger.records import fields as pf
from comal.ledger.store import Ledger
from comal.messages import JSONObject, digest_bytes, message_from_json
from comal.session import CallSite, pair
from comal.tools.edits import write_atomic

OK_STATUSES = frozenset({"ok", "postcondition_observed"})
DIFF_LINES_SHOWN = 12
TURN_TEXT_CHARS = 70


@dataclass(frozen=True, slots=True)
class FileEvent:
    """One change of a file by this session: a Write/Edit, or a rewind that restored it."""

    seq: int
    path: str
    """The absolute path."""
    before: str | None
    """Digest of the file just before (None: absent)."""
    after: frozenset[str | None]
    """Digests the file may hold just after (two when the outcome is unknown)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """A user message and what the calls after it (until the next one) did."""

    number: int
    seq: int
    entry_id: str
    text: str
    files: tuple[str, ...]
    not_restorable: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FilePlan:
    """What a rewind does to one file."""

    path: str
    target: bytes | None
    """The bytes to restore; None deletes the file (it did not exist at the point)."""
    target_digest: str | None
    expected: frozenset[str | None]
    """What this session's last change may have left; the file must still hold one of them."""
    current_digest: str | None
    current: bytes | None
    restorable: bool = True
    reason: str = ""

    @property
    def changed_outside(self) -> bool:
        """The file no longer holds what this session left there."""
        return self.restorable and self.current_digest not in self.expected

    @property
    def unchanged(self) -> bool:
        """The file already holds the state of the point."""
        return self.current_digest == self.target_digest


@dataclass(frozen=True, slots=True)
class RewindPlan:
    """Everything a rewind to one point would do."""

    session_id: str
    to_seq: int
    label: str
    files: tuple[FilePlan, ...]
    not_restorable: tuple[str, ...]
    notes: list[str] = field(default_factory=list)

    @property
    def conflicts(self) -> tuple[FilePlan, ...]:
        """Files changed outside this session since its last change."""
        return tuple(f for f in self.files if f.changed_outside)


def _read(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RewindError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _prepared(entry: Entry) -> tuple[str, str | None, str] | None:
    """(path, digest before, digest intended) of a Write/Edit's preparation, if it has one."""
    if entry.kind != Kind.TOOL_STARTED:
        return None
    prep = ToolStartedRecord.from_entry(entry).preparation
    if prep is None:
        return None
    path, intended = prep.abs_path, prep.digest_intended
    if path is None or intended is None:
        return None
    return path, prep.digest_before, intended


def file_events(entries: list[Entry]) -> list[FileEvent]:
    """Every change of a file in `entries` (in the order they happened)."""
    pairing = pair(entries)
    found = []
    for entry in entries:
        prepared = _prepared(entry)
        if prepared is not None:
            path, before, intended = prepared
            status = _result_status(pairing.site_of(entry))
            after: frozenset[str | None] = frozenset({intended})
            if status is None or status == "uncertain":
                after = frozenset({before, intended})
            elif status not in OK_STATUSES:
                after = frozenset({before})
            found.append(FileEvent(entry.seq, path, before, after))
        elif entry.kind == REWOUND_KIND:
            for item in SessionRewound.from_entry(entry).files:
                restored_path = pf.text_or_none(item, "path")
                if restored_path is None:
                    continue
                found.append(
                    FileEvent(
                        entry.seq,
                        restored_path,
                        pf.text_or_none(item, "previous_digest"),
                        frozenset({pf.text_or_none(item, "restored_digest")}),
                    )
                )
    return found


def _result_status(site: CallSite | None) -> str | None:
    """The status of the result of a started call (None: no result recorded)."""
    if site is None or site.result is None:
        return None
    return str(ToolResult.from_entry(site.result).status)


def _unrestorable_call(entry: Entry) -> str | None:
    """A one-line description of a call whose effects Comal cannot undo, if it is one."""
    if entry.kind != Kind.TOOL_STARTED:
        return None
    started = ToolStartedRecord.from_entry(entry)
    name = started.name or ""
    if not (name == "Bash" or name.startswith("mcp__")):
        return None
    command = pf.text_or_none(started.arguments, "command")
    shown = f" {command}" if command is not None else ""
    return f"{name}{shown[:100]} ({started.call_id})"


def turns(ledger: Ledger, session_id: str) -> list[Turn]:
    """The session's turns, each with the files it changed and the calls it cannot undo."""
    entries = ledger.entries(session_id)
    found: list[Turn] = []
    files: list[str] = []
    other: list[str] = []
    head: Entry | None = None

    def close() -> None:
        if head is not None:
            message = message_from_json(UserMessage.from_entry(head).message or {})
            found.append(
                Turn(len(found) + 1, head.seq, head.id, message.text, tuple(files), tuple(other))
            )

    for entry in entries:
        if entry.kind == Kind.MESSAGE_USER:
            close()
            head, files, other = entry, [], []
        elif (prepared := _prepared(entry)) is not None:
            if prepared[0] not in files:
                files.append(prepared[0])
        elif (line := _unrestorable_call(entry)) is not None:
            other.append(line)
    close()
    return found


def turn_label(turn: Turn) -> str:
    """A turn as a picker shows it: its message, then the files it changed."""
    first = turn.text.strip().splitlines()[0] if turn.text.strip() else "(empty)"
    lines = [f"{turn.number:>3}  {first[:TURN_TEXT_CHARS]}"]
    lines += [f"       changed {path}" for path in turn.files]
    lines += [f"       not restorable: {line}" for line in turn.not_restorable]
    return "\n".join(lines)


def resolve_point(ledger: Ledger, session_id: str, to: str | None) -> tuple[int, str]:
    """(to_seq, label): the history through `to_seq` is kept.

    `to` is a turn number (the state just before that turn's message), `cp:N` or
    `checkpoint:N` (the state at checkpoint N), an entry id `evt_…` (the state right after
    that entry), or None (before the last turn).

    Raises:
        RewindError: the point names nothing in the session.
    """
    entries = ledger.entries(session_id)
    if to is None or to.isdigit():
        listed = turns(ledger, session_id)
        if not listed:
            raise RewindError(f"session {session_id} has no turn to rewind")
        number = len(listed) if to is None else int(to)
        if not 1 <= number <= len(listed):
            raise RewindError(f"no turn {number}: the session has turns 1 to {len(listed)}")
        return listed[number - 1].seq - 1, f"before turn {number}"
    lowered = to.lower()
    for prefix in ("checkpoint:", "cp:"):
        if lowered.startswith(prefix) and lowered[len(prefix) :].isdigit():
            number = int(lowered[len(prefix) :])
            for entry in entries:
                if (
                    entry.kind == Kind.CHECKPOINT
                    and CheckpointRecord.from_entry(entry).number == number
                ):
                    return entry.seq, f"checkpoint {number}"
            raise RewindError(f"session {session_id} has no checkpoint {number}")
    for entry in entries:
        if entry.id == to:
            return entry.seq, f"after entry {to}"
    raise RewindError(
        f"{to!r} is not a turn number, a checkpoint (cp:N) or an entry of session {session_id}"
    )


def _bytes_of(ledger: Ledger, digest: str | None) -> tuple[bool, bytes | None]:
    """(known, bytes) of a file state: every state a change started from is a blob."""
    if digest is None:
        return True, None
    try:
        return True, ledger.blob(digest)
    except LedgerError:
        return False, None


def plan_rewind(ledger: Ledger, session_id: str, to: str | None) -> RewindPlan:
    """What rewinding `session_id` to `to` would do to its files (nothing is changed).

    The state of a file at the point is the state just before its first change after the
    point, in the order things really happened (what earlier conversation rewinds went back
    over included); what it should hold now is what its last change left.

    Raises:
        RewindError: unknown point, or a file that cannot be read.
    """
    to_seq, label = resolve_point(ledger, session_id, to)
    events = file_events(ledger.entries(session_id, rewound=True))
    plans: list[FilePlan] = []
    for path in dict.fromkeys(e.path for e in events if e.seq > to_seq):
        mine = [e for e in events if e.path == path]
        first = next(e for e in mine if e.seq > to_seq)
        known, target = _bytes_of(ledger, first.before)
        current = _read(path)
        plans.append(
            FilePlan(
                path,
                target,
                first.before,
                mine[-1].after,
                None if current is None else digest_bytes(current),
                current,
                restorable=known,
                reason="" if known else "the bytes before its change were not kept",
            )
        )
    others = [
        line
        for e in ledger.entries(session_id)
        if e.seq > to_seq and (line := _unrestorable_call(e)) is not None
    ]
    return RewindPlan(session_id, to_seq, label, tuple(plans), tuple(others))


def diff_summary(plan: FilePlan) -> str:
    """A few lines telling how the file now differs from what this session left."""
    now = "absent" if plan.current is None else f"{len(plan.current)} bytes"
    head = (
        f"{plan.path}: changed outside this session since its last change "
        f"(now {now}, {plan.current_digest or 'absent'}; expected "
        f"{' or '.join(sorted(d or 'absent' for d in plan.expected))})"
    )
    if plan.current is None or plan.target is None:
        return head
    old = plan.target.decode("utf-8", errors="replace").splitlines()
    new = plan.current.decode("utf-8", errors="replace").splitlines()
    lines = list(difflib.unified_diff(old, new, "at the rewind point", "now", n=0, lineterm=""))
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    shown = [f"    {ln}" for ln in lines[:DIFF_LINES_SHOWN]]
    more = ["    …"] if len(lines) > DIFF_LINES_SHOWN else []
    return "\n".join([f"{head}; +{added} -{removed} lines against the rewind point", *shown, *more])


def apply_rewind(
    ledger: Ledger,
    plan: RewindPlan,
    *,
    files: bool = True,
    conversation: bool = True,
    force: bool = False,
) -> Entry:
    """Restore the files (unless `files` is false), record the rewind, and return its entry.

    Raises:
        RewindError: files changed outside the session and `force` is not set (nothing is
            written or recorded then).
    """
    if files and plan.conflicts and not force:
        summaries = "\n".join(diff_summary(f) for f in plan.conflicts)
        raise RewindError(
            f"{summaries}\nnothing was restored; rewind with --force to overwrite "
            "these changes, or --conversation-only to leave files as they are"
        )
    restored: list[JSONObject] = []
    for item in plan.files:
        if not item.restorable or not files:
            continue
        if item.current is not None:
            # What the file held is kept too, so a later rewind can come back to it.
            ledger.put_blob(item.current)
        if not item.unchanged:
            _restore(item)
        restored.append(
            {
                "path": item.path,
                "restored_digest": item.target_digest,
                "previous_digest": item.current_digest,
                "forced": item.changed_outside,
            }
        )
    record = SessionRewound(
        to_seq=plan.to_seq,
        to=plan.label,
        files=tuple(restored),
        files_restored=files,
        conversation=conversation,
        not_restorable=(
            *plan.not_restorable,
            *(f"{f.path}: {f.reason}" for f in plan.files if not f.restorable),
        ),
    )
    return ledger.append_record(plan.session_id, record)


def _restore(item: FilePlan) -> None:
    path = Path(item.path)
    try:
        if item.target is None:
            path.unlink(missing_ok=True)
        else:
            write_atomic(path, item.target)
    except OSError as exc:
        raise RewindError(f"cannot restore {item.path}: {exc.strerror or exc}") from exc
    except ToolError as exc:
        raise RewindError(f"cannot restore {item.path}: {exc.message}") from exc
