"""Which importer reads a file: decided from its content, never from its name alone.

The first non-blank lines are read (up to `_SNIFF_LINES`, so bookkeeping records such as Claude
Code 2.x's `file-history-snapshot` do not hide the format):
- JSONL whose records have `type` + `payload` (`session_meta`, `response_item`, …) → Codex;
- JSONL with Claude Code records (`sessionId`/`parentUuid`, `type` user/assistant/summary/
  system, 2.x `file-history-snapshot`/`progress`/`queue-operation`);
- JSONL of OpenHands evaluation records (`instance_id` + `history` of events), or a JSON array
  of OpenHands events → OpenHands;
- a JSON object with `sessionId`, `projectHash` and `messages` → Gemini CLI;
- a JSON object with `trajectory_format` `mini-swe-agent-*` (or `messages`) → mini-swe-agent;
  one with `history` → SWE-agent;
- Markdown with `# aider chat started at` lines → Aider.

Some files hold several sessions (an evaluation `output.jsonl`, an Aider history):
`parse_sessions` returns them all, in file order, each with the file's digest and its index.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import comal.importers.aider as aider
import comal.importers.claude_code as claude_code
import comal.importers.codex as codex
import comal.importers.gemini_cli as gemini_cli
import comal.importers.mini_swe_agent as mini_swe_agent
import comal.importers.openhands as openhands
import comal.importers.swe_agent as swe_agent
from comal.importers.plan import ParsedSession, format_error, read_json


def _one(parse: Callable[[Path], ParsedSession]) -> Callable[[Path], Sequence[ParsedSession]]:
    return lambda path: (parse(path),)


_PARSERS: dict[str, Callable[[Path], Sequence[ParsedSession]]] = {
    claude_code.FORMAT: _one(claude_code.parse),
    codex.FORMAT: _one(codex.parse),
    mini_swe_agent.FORMAT: _one(mini_swe_agent.parse),
    swe_agent.FORMAT: _one(swe_agent.parse),
    openhands.FORMAT: openhands.parse,
    aider.FORMAT: aider.parse,
    gemini_cli.FORMAT: _one(gemini_cli.parse),
}
FORMATS = tuple(_PARSERS)
"""Importer names, as used in `import:<format>` sources (each registered once, above)."""
_CODEX_TYPES = {"session_meta", "response_item", "turn_context", "event_msg", "compacted"}
_CLAUDE_TYPES = {"file-history-snapshot", "progress", "queue-operation", "summary"}
_SNIFF_LINES = 50
_SNIFF_BYTES = 1 << 16
"""How much of a line is kept to recognise a Markdown history (JSON lines are parsed whole)."""


def _head(path: Path) -> list[tuple[int, str]]:
    """The first non-blank lines, with their numbers."""
    lines: list[tuple[int, str]] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                lines.append((number, raw.decode("utf-8", "replace")))
                if len(lines) >= _SNIFF_LINES:
                    break
    return lines


def _jsonl_format(record: dict[str, object]) -> str | None:
    kind = record.get("type")
    if gemini_cli.is_conversation(record):  # a recording on one line: it has a `sessionId` too
        return gemini_cli.FORMAT
    if kind in _CODEX_TYPES and "payload" in record:
        return codex.FORMAT
    if "sessionId" in record or "parentUuid" in record or kind in _CLAUDE_TYPES:
        return claude_code.FORMAT
    if openhands.is_evaluation_record(record):
        return openhands.FORMAT
    return None


def detect_format(path: Path) -> str:
    """The importer for `path`.

    Raises:
        ImportFormatError: unreadable, empty, or no known format.
    """
    try:
        head = _head(path)
    except OSError as exc:
        raise format_error(path, None, f"cannot read: {exc}") from exc
    if not head:
        raise format_error(path, None, "empty file")
    first_number, first = head[0]
    records = []
    for _, line in head:
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            break
        if not isinstance(value, dict):
            break
        records.append(value)
    for record in records:
        found = _jsonl_format(record)
        if found is not None:
            return found
    if aider.looks_like_aider("".join(line[:_SNIFF_BYTES] for _, line in head)):
        return aider.FORMAT
    stripped = first.lstrip()
    if stripped.startswith("["):
        return openhands.FORMAT
    if stripped.startswith("{") and len(records) <= 1:
        doc = read_json(path)
        if gemini_cli.is_conversation(doc):
            return gemini_cli.FORMAT
        if "messages" in doc or str(doc.get("trajectory_format", "")).startswith("mini-swe"):
            return mini_swe_agent.FORMAT
        if "history" in doc:
            return swe_agent.FORMAT
    raise format_error(
        path, first_number, "not a recognised session format (" + ", ".join(FORMATS) + ")"
    )


def file_digest(path: Path) -> str:
    """sha256 of a recorded file (hex), by which re-imports are recognised.

    Raises:
        ImportFormatError: unreadable file.
    """
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise format_error(path, None, f"cannot read: {exc}") from exc
    return digest.hexdigest()


def parse_sessions(path: Path, fmt: str | None = None) -> tuple[ParsedSession, ...]:
    """Every session of `path` with the importer `fmt` (detected when None).

    Raises:
        ImportFormatError: unknown format, or a malformed file (names file and line).
    """
    name = fmt or detect_format(path)
    parser = _PARSERS.get(name)
    if parser is None:
        raise format_error(path, None, f"unknown import format {name!r}")
    digest = file_digest(path)
    return tuple(
        replace(session, file_digest=digest, file_index=index)
        for index, session in enumerate(parser(path))
    )


def parse_file(path: Path, fmt: str | None = None) -> ParsedSession:
    """The one session of `path` (see `parse_sessions` for files that hold several).

    Raises:
        ImportFormatError: unknown format, a malformed file, or a file of several sessions.
    """
    sessions = parse_sessions(path, fmt)
    if len(sessions) != 1:
        raise format_error(path, None, f"holds {len(sessions)} sessions; import it whole")
    return sessions[0]
