"""Importers: other agents' recorded sessions as ordinary Comal sessions.

Claude Code JSONL (1.x and 2.x with sub-agent files), Codex CLI rollouts, mini-swe-agent (v1 text
actions, v2 tool calling), SWE-agent `.traj`, OpenHands event streams and Aider chat histories.
Parsing is pure (`parse_sessions` → `ParsedSession`s); `import_files` writes only after every
file parsed, so nothing is ever half-imported.
"""

from comal.importers.detect import FORMATS, detect_format, parse_file, parse_sessions
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
    "parse_sessions",
    "write_session",
]
