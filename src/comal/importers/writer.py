"""Writing parsed peer sessions into the ledger as ordinary Comal sessions.

`import_files` parses every file first; only when all of them parsed does it write, so a
malformed file (or line) leaves the ledger untouched. Children (sub-agent chains) are written
after their parent, with `parent_id` set. Media of tool results are stored as blobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from comal.importers.detect import parse_file
from comal.importers.plan import ParsedSession, PlannedEntry
from comal.ledger import Entry, Ledger
from comal.messages import JSONObject, JSONValue


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """One session written by an import."""

    session_id: str
    parent_id: str | None
    path: str
    label: str
    source: str
    entries: int


def append_planned(ledger: Ledger, session_id: str, planned: PlannedEntry) -> Entry:
    """Append one planned entry (media stored as blobs first)."""
    payload = planned.payload
    if planned.media:
        media: list[JSONValue] = []
        for media_type, data in planned.media:
            digest = ledger.put_blob(data)
            media.append({"media_type": media_type, "blob": digest, "size_bytes": len(data)})
        payload = {**payload, "media": media}
    return ledger.append(session_id, planned.kind, payload, body=planned.body)


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
    started: JSONObject = parsed.started_payload()
    ledger.append(session_id, "session.started", started)
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


def import_files(
    ledger: Ledger, paths: Sequence[Path], fmt: str | None = None
) -> list[ImportedSession]:
    """Parse all `paths`, then write them; nothing is written when any file is malformed.

    Raises:
        ImportFormatError: a malformed file, naming the file and line.
    """
    parsed = [parse_file(Path(p), fmt) for p in paths]
    written: list[ImportedSession] = []
    for session in parsed:
        written.extend(write_session(ledger, session))
    return written
