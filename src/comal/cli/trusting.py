"""Showing a project's untrusted configuration and recording the user's trust in it.

Used before a session starts (`run_config`: only when a person can answer on a terminal) and
by `comal trust`. What a file would run is shown in full before anything is trusted.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from comal.config_trust import ProjectFile, trust, untrusted_files

SHOWN_LINES = 80


def describe(files: Sequence[ProjectFile]) -> str:
    """The files and their content, as shown before the question."""
    parts = []
    for file in files:
        try:
            text = file.path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            text = f"(cannot read: {exc.strerror or exc})"
        lines = text.splitlines()
        shown = "\n".join(f"    {line}" for line in lines[:SHOWN_LINES])
        more = len(lines) - SHOWN_LINES
        tail = f"\n    … {more} more lines" if more > 0 else ""
        parts.append(f"{file.path} ({file.runs}, {file.digest[:19]}…):\n{shown}{tail}")
    return "\n\n".join(parts)


def _ask(question: str) -> bool:
    print(question, end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        return False
    return answer.strip().lower() in ("y", "yes")


def _can_ask() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def review_untrusted(workspace: Path, config_dir: Path, *, assume_yes: bool = False) -> bool:
    """Show the untrusted project files and trust them if the user says so.

    Returns:
        True when files were trusted (the configuration should be loaded again).
    """
    files = untrusted_files(workspace, config_dir)
    if not files or not (assume_yes or _can_ask()):
        return False
    print(
        "This project configures commands Comal would run outside the sandbox, new or changed"
        f" since you last trusted them:\n\n{describe(files)}\n",
        file=sys.stderr,
    )
    if not assume_yes and not _ask("Trust these files and run what they configure? [y/N] "):
        print("comal: not trusted; their hooks and MCP servers stay off", file=sys.stderr)
        return False
    where = trust(config_dir, files)
    print(f"comal: trusted {len(files)} file(s) (recorded in {where})", file=sys.stderr)
    return True
