"""The tools a session offers: the native file/shell/search tools plus the session-bound ones.

Session-bound tools (EvidenceRead, the board, finish_call) need the ledger and the session id,
which tools may not import; they receive small reader/recorder objects built here.
"""

from __future__ import annotations

from comal.tools.base import Tool, default_tools


def standard_tools() -> list[Tool]:
    """Read, Write, Edit, Bash, Glob and Grep."""
    return default_tools()
