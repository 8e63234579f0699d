"""Slash commands typed into the TUI's input box, parsed into typed values.

Parsing is pure: `parse_command(text)` returns None for ordinary text (sent to the model), a
`SlashCommand` for a known command, and raises `UnknownCommandError` for anything else that
starts with `/`, so a typo is never sent to the model as a message.
"""

from __future__ import annotations

from dataclasses import dataclass

from comal.config import EFFORTS
from comal.errors import ComalError


class UnknownCommandError(ComalError):
    """A line started with `/` but named no command, or had bad arguments."""

    code = "UNKNOWN_COMMAND"
    exit_code = 2


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One parsed command."""

    name: str
    """`context`, `state`, `compact`, `checkpoints`, `help` or `quit`."""
    number: int | None = None
    """The checkpoint to show (`/session checkpoints N`), or the turn to rewind to."""
    mode: str = "both"
    """`/rewind`: `both`, `files` (files only) or `conversation` (conversation only)."""
    force: bool = False
    """`/rewind … force`: overwrite files changed outside the session."""
    value: str | None = None
    """`/model NAME`, `/effort LEVEL` (`off` for none), `/resume N|ID`; None shows the current
    one (the list, for `/resume`)."""


HELP_ROWS: tuple[tuple[str, str], ...] = (
    ("/context · /state", "the window row by row · status and pending calls"),
    (
        "/compact",
        "derive a checkpoint now (no model call; waits for the turn boundary, Esc cancels it);"
        " refused with its figures when it would not make the view smaller",
    ),
    ("/session checkpoints [N]", "list the checkpoints, or show checkpoint N"),
    ("/rewind [N]", "back to before turn N (a picker without N)"),
    ("/model · /effort", "the server's models, or switch · the effort"),
    ("/status · /cost · /mcp", "session · cost · MCP servers and their tools"),
    ("/permissions · /config", "the rules in force · the settings in force"),
    ("/memory · /resume", "instruction files · open another session here"),
    ("/init · /clear · !cmd", "AGENTS.md · new session · run cmd, output sent"),
    ("/help · /quit · /NAME", "this list · leave · a custom command"),
    ("Esc · Ctrl+C ×2 · ↑ ↓", "cancel the turn · quit · earlier prompts"),
)
"""The `/help` table: (what to type, what it does)."""

COMMAND_NAMES = (
    "/context, /state, /compact, /session checkpoints [N], /rewind, /model, /effort, /init,"
    " /clear, /status, /cost, /mcp, /permissions, /config, /memory, /resume, /help, /quit,"
    " or a custom command"
)
EFFORT_WORDS = (*EFFORTS, "off")
REWIND_USAGE = "usage: /rewind [N] [files|conversation] [force] (N is a turn number)"

_SIMPLE = {
    "/context": "context",
    "/state": "state",
    "/compact": "compact",
    "/init": "init",
    "/clear": "clear",
    "/help": "help",
    "/?": "help",
    "/quit": "quit",
    "/exit": "quit",
    "/status": "status",
    "/cost": "cost",
    "/mcp": "mcp",
    "/permissions": "permissions",
    "/config": "config",
    "/memory": "memory",
}


def parse_command(text: str) -> SlashCommand | None:
    """Parse one submitted line.

    Args:
        text: what the user submitted, stripped.

    Returns:
        None when the text is a message for the model, else the command.

    Raises:
        UnknownCommandError: the text starts with `/` but is not a known command.
    """
    # "//" escapes a message that really starts with a slash (the app strips one).
    if not text.startswith("/") or text.startswith("//"):
        return None
    words = text.split()
    head = words[0].lower()
    if head in _SIMPLE and len(words) == 1:
        return SlashCommand(_SIMPLE[head])
    if head in ("/session", "/checkpoints"):
        rest = words[1:] if head == "/checkpoints" else words[2:]
        if head == "/session" and (len(words) < 2 or words[1].lower() != "checkpoints"):
            raise UnknownCommandError("usage: /session checkpoints [N]")
        if not rest:
            return SlashCommand("checkpoints")
        if len(rest) == 1 and rest[0].isdigit():
            return SlashCommand("checkpoints", int(rest[0]))
        raise UnknownCommandError("usage: /session checkpoints [N] (N is a checkpoint number)")
    if head == "/rewind":
        return _rewind(words[1:])
    if head == "/resume" and len(words) <= 2:
        return SlashCommand("resume", value=words[1] if len(words) == 2 else None)
    if head in ("/model", "/effort") and len(words) <= 2:
        value = words[1] if len(words) == 2 else None
        if head == "/effort" and value is not None and value.lower() not in EFFORT_WORDS:
            raise UnknownCommandError("usage: /effort [low|medium|high|off]")
        return SlashCommand(head[1:], value=value.lower() if head == "/effort" and value else value)
    raise UnknownCommandError(f"unknown command {words[0]!r}; commands: {COMMAND_NAMES}")


def _rewind(words: list[str]) -> SlashCommand:
    number, mode, force = None, "both", False
    for word in (w.lower() for w in words):
        if word.isdigit() and number is None:
            number = int(word)
        elif word in ("files", "conversation") and mode == "both":
            mode = word
        elif word == "force":
            force = True
        else:
            raise UnknownCommandError(REWIND_USAGE)
    return SlashCommand("rewind", number, mode, force)
