"""The `/rewind` picker: the session's turns, each with the files it changed.

Dismisses with the chosen turn number, or None on Esc.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from comal.agent.features.rewind import Turn, turn_label


class RewindScreen(ModalScreen[int | None]):
    """Pick the turn to go back to (the state just before it)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "cancel")]

    def __init__(self, turns: list[Turn]) -> None:
        super().__init__()
        self.turns = turns

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind"):
            yield Static("Rewind to before which turn? (Enter picks, Esc cancels)")
            yield OptionList(
                *(Option(turn_label(t), id=str(t.number)) for t in reversed(self.turns)),
                id="rewind-turns",
            )

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0) or None)

    def action_dismiss_none(self) -> None:
        """Esc: rewind nothing."""
        self.dismiss(None)
