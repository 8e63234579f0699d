"""Which importer reads a file: decided from its content, never from its name alone.

- JSONL whose records have `type` + `payload` (`session_meta`, `response_item`, …) → Codex;
- JSONL with Claude Code records (`sessionId`/`uuid`, `type` user/assistant/summary/system);
- a JSON object with `trajectory_format` `mini-swe-agent-*` (or `messages` + `info`) →
  mini-swe-agent; one with `history` → SWE-agent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from comal.importers import claude_code, codex, mini_swe_agent, swe_agent
from comal.importers.plan import ParsedSession, format_error, read_json

FORMATS = (claude_code.FORMAT, codex.FORMAT, mini_swe_agent.FORMAT, swe_agent.FORMAT)
"""Importer names, as used in `import:<format>` sources."""

_PARSERS: dict[str, Callable[[Path], ParsedSession]] = {
    claude_code.FORMAT: claude_code.parse,
    codex.FORMAT: codex.parse,
    mini_swe_agent.FORMAT: mini_swe_agent.parse,
    swe_agent.FORMAT: swe_agent.parse,
}
_CODEX_TYPES = {"session_meta", "response_item", "turn_context", "event_msg", "compacted"}


def _first_line(path: Path) -> tuple[int, str]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                return number, raw.decode("utf-8", "replace")
    return 0, ""


def detect_format(path: Path) -> str:
    """The importer for `path`.

    Raises:
        ImportFormatError: unreadable, empty, or no known format.
    """
    try:
        number, first = _first_line(path)
    except OSError as exc:
        raise format_error(path, None, f"cannot read: {exc}") from exc
    if not first:
        raise format_error(path, None, "empty file")
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        record = None
    if isinstance(record, dict):
        if record.get("type") in _CODEX_TYPES and "payload" in record:
            return codex.FORMAT
        if "sessionId" in record or "parentUuid" in record or record.get("type") == "summary":
            return claude_code.FORMAT
    if first.lstrip().startswith("{"):
        doc = read_json(path)
        if "messages" in doc or str(doc.get("trajectory_format", "")).startswith("mini-swe"):
            return mini_swe_agent.FORMAT
        if "history" in doc:
            return swe_agent.FORMAT
    raise format_error(path, number, "not a recognised session format (" + ", ".join(FORMATS) + ")")


def parse_file(path: Path, fmt: str | None = None) -> ParsedSession:
    """Parse `path` with the importer `fmt` (detected when None).

    Raises:
        ImportFormatError: unknown format, or a malformed file (names file and line).
    """
    name = fmt or detect_format(path)
    parser = _PARSERS.get(name)
    if parser is None:
        raise format_error(path, None, f"unknown import format {name!r}")
    return parser(path)
