"""Slash commands typed into the TUI's input box, parsed into typed values.

Parsing is pure: `parse_command(text)` returns None for ordinary text (sent to the model), a
`SlashCommand` for a known command, and raises `UnknownCommandError` for anything else that
starts with `/`, so a typo is never sent to the model as a message.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """The checkpoint to show (`/session checkpoints N`)."""


HELP_ROWS: tuple[tuple[str, str], ...] = (
    ("/context", "where the context window goes, row by row"),
    ("/state", "session status, board, pending and uncertain calls, usage, lock"),
    (
        "/compact",
        "derive a checkpoint now (no model call; waits for the turn boundary, Esc cancels it);"
        " refused with its figures when it would not make the view smaller",
    ),
    ("/session checkpoints [N]", "list the checkpoints, or show checkpoint N"),
    ("/help", "this list"),
    ("/quit · Ctrl+Q", "leave (the session stays resumable: comal --resume UUID)"),
    ("Esc", "cancel the running turn"),
    ("Enter · Ctrl+J", "send · new line (pasted text keeps its lines)"),
)
"""The `/help` table: (what to type, what it does)."""

COMMAND_NAMES = "/context, /state, /compact, /session checkpoints [N], /help, /quit"

_SIMPLE = {
    "/context": "context",
    "/state": "state",
    "/compact": "compact",
    "/help": "help",
    "/?": "help",
    "/quit": "quit",
    "/exit": "quit",
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
    raise UnknownCommandError(f"unknown command {words[0]!r}; commands: {COMMAND_NAMES}")
