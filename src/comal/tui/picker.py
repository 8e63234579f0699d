"""The session picker `comal --resume` (no id) shows on a terminal: a list, Enter picks.

A small app of its own, run before the main one: the session is chosen before a provider is
opened. Esc or Ctrl+C leaves without a choice.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option


class SessionPicker(App[str | None]):
    """Lists (session id, label) rows; exits with the chosen id, or None.

    Args:
        rows: the sessions offered, latest first.
        where: the directory they were recorded in (shown in the title line).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "leave", show=False),
        Binding("ctrl+c", "leave", "leave", show=False),
    ]

    def __init__(self, rows: list[tuple[str, str]], where: str) -> None:
        super().__init__()
        self.rows = rows
        self.where = where

    def compose(self) -> ComposeResult:
        yield Label(f"Resume a session of {self.where} (Enter picks, Esc leaves)")
        yield OptionList(*(Option(label, id=session_id) for session_id, label in self.rows))

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.exit(event.option.id)

    def action_leave(self) -> None:
        self.exit(None)


async def pick_session(rows: list[tuple[str, str]], where: str) -> str | None:
    """Show the picker on the terminal; the chosen session's id, or None."""
    return await SessionPicker(rows, where).run_async()
