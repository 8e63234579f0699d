"""Writing parsed peer sessions into the ledger as ordinary Comal sessions.

`import_files` parses every file first; only when all of them parsed does it write, so a
malformed file (or line) leaves the ledger untouched. Children (sub-agent chains) are written
after their parent, with `parent_id` set. Media of tool results are stored as blobs.

Importing a file again returns the sessions already imported from it (matched by the file's
sha256 and the session's index in the file, `origin` in `session.started`) instead of writing
them twice; `new=True` imports a fresh copy. A sub-agent file listed beside its parent session's
file is imported once, as the parent's child.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from comal.importers.claude_code import parent_session_file
from comal.importers.detect import parse_sessions
from comal.importers.plan import ParsedSession, PlannedEntry
from comal.ledger import Entry, Ledger
from comal.ledger.records import ImportOrigin, Kind, RecordedMedia, SessionStarted, ToolResult


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """One session written by an import."""

    session_id: str
    parent_id: str | None
    path: str
    label: str
    source: str
    entries: int
    existing: bool = False
    """Already imported from the same file (nothing written)."""


def append_planned(ledger: Ledger, session_id: str, planned: PlannedEntry) -> Entry:
    """Append one planned entry (media stored as blobs first)."""
    if not planned.media:
        return ledger.append_record(session_id, planned.record, body=planned.body)
    # Only a tool result carries media; its blobs are stored before the entry names them.
    media: list[RecordedMedia] = []
    for media_type, data in planned.media:
        digest = ledger.put_blob(data)
        media.append(RecordedMedia(media_type, blob=digest, size_bytes=len(data)))
    result = replace(ToolResult.from_payload(planned.payload), media=tuple(media))
    return ledger.append_record(session_id, result, body=planned.body)


def write_session(
    ledger: Ledger, parsed: ParsedSession, *, parent_id: str | None = None
) -> list[ImportedSession]:
    """Write `parsed` (and its children) and return what was written, parent first."""
    session_id = ledger.create_session(
        cwd=parsed.cwd,
        model=parsed.model,
        title=parsed.title,
        source=parsed.source,
        parent_id=parent_id,
    )
    ledger.append_record(session_id, parsed.started_record())
    for planned in parsed.entries:
        append_planned(ledger, session_id, planned)
    written = [
        ImportedSession(
            session_id, parent_id, parsed.path, parsed.label, parsed.source, len(parsed.entries) + 1
        )
    ]
    for child in parsed.children:
        written.extend(write_session(ledger, child, parent_id=session_id))
    return written


def _origin(ledger: Ledger, session_id: str) -> ImportOrigin | None:
    started = ledger.entries(session_id, kinds=(Kind.SESSION_STARTED,))
    origin = SessionStarted.from_entry(started[0]).origin if started else None
    return origin if isinstance(origin, ImportOrigin) else None


def _imported(ledger: Ledger) -> dict[tuple[str, int], str]:
    """Top-level imported sessions by (file sha256, index in the file)."""
    found: dict[tuple[str, int], str] = {}
    for info in ledger.sessions():
        if info.parent_id is not None or not info.source.startswith("import:"):
            continue
        origin = _origin(ledger, info.id)
        if origin is not None and origin.sha256 and origin.index is not None:
            found.setdefault((origin.sha256, origin.index), info.id)
    return found


def _existing(ledger: Ledger, session_id: str, parent_id: str | None) -> list[ImportedSession]:
    """An imported session and its children, as first written."""
    info = ledger.session(session_id)
    origin = _origin(ledger, session_id)
    done = [
        ImportedSession(
            session_id,
            parent_id,
            "" if origin is None else origin.file,
            (None if origin is None else origin.label) or info.title,
            info.source,
            info.entries,
            existing=True,
        )
    ]
    for child in ledger.children(session_id):
        done.extend(_existing(ledger, child, session_id))
    return done


def import_files(
    ledger: Ledger, paths: Sequence[Path], fmt: str | None = None, *, new: bool = False
) -> list[ImportedSession]:
    """Parse all `paths`, then write them; nothing is written when any file is malformed.

    A file imported before returns its sessions as they are (`existing`), unless `new`.

    Raises:
        ImportFormatError: a malformed file, naming the file and line.
    """
    listed = {Path(p).resolve() for p in paths}

    def read_with_parent(path: Path) -> bool:
        parent = parent_session_file(path)
        return parent is not None and parent.resolve() in listed

    wanted = [Path(p) for p in paths if not read_with_parent(Path(p))]
    parsed = [session for p in wanted for session in parse_sessions(p, fmt)]
    known = {} if new else _imported(ledger)
    written: list[ImportedSession] = []
    for session in parsed:
        previous = known.get((session.file_digest, session.file_index))
        if previous is not None:
            written.extend(_existing(ledger, previous, None))
            continue
        written.extend(write_session(ledger, session))
    return written
