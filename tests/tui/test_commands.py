"""Slash-command parsing: known commands, checkpoint numbers, and typos that must not reach
the model."""

from __future__ import annotations

import pytest

from comal.tui.commands import SlashCommand, UnknownCommandError, parse_command


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/context", SlashCommand("context")),
        ("/state", SlashCommand("state")),
        ("/compact", SlashCommand("compact")),
        ("/help", SlashCommand("help")),
        ("/quit", SlashCommand("quit")),
        ("/session checkpoints", SlashCommand("checkpoints")),
        ("/session checkpoints 3", SlashCommand("checkpoints", 3)),
        ("/checkpoints 2", SlashCommand("checkpoints", 2)),
        ("fix the bug in /src/app.py", None),
        ("//etc/hosts is a path", None),
    ],
)
def test_known_commands_and_plain_messages(text: str, expected: SlashCommand | None) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("/contxt", "unknown command '/contxt'"),
        ("/session", "usage: /session checkpoints [N]"),
        ("/session checkpoints two", "N is a checkpoint number"),
        ("/context now", "unknown command '/context'"),
    ],
)
def test_typos_are_errors_not_messages(text: str, hint: str) -> None:
    with pytest.raises(UnknownCommandError) as caught:
        parse_command(text)
    assert hint in caught.value.message
