"""Importers: other agents' recorded sessions as ordinary Comal sessions.

Claude Code JSONL, Codex CLI rollouts, mini-swe-agent (v1 text actions, v2 tool calling) and
SWE-agent `.traj`. Parsing is pure (`parse_file` → `ParsedSession`); `import_files` writes only
after every file parsed, so nothing is ever half-imported.
"""

from comal.importers.detect import FORMATS, detect_format, parse_file
from comal.importers.plan import ParsedSession, PlannedEntry
from comal.importers.writer import ImportedSession, append_planned, import_files, write_session

__all__ = [
    "FORMATS",
    "ImportedSession",
    "ParsedSession",
    "PlannedEntry",
    "append_planned",
    "detect_format",
    "import_files",
    "parse_file",
    "write_session",
]
