"""The permission prompt: a modal yes/no for a call the policy marked `ask`.

Dismisses with True only on an explicit yes; Esc and "n" decline, so a stray key never grants
access.
"""

from __future__ import annotations

import json
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from comal.messages import JSONObject

ARGUMENTS_PREVIEW_CHARS = 600


class ConfirmScreen(ModalScreen[bool]):
    """Asks whether one tool call may run."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"),
        Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "no"),
    ]

    def __init__(self, tool: str, arguments: JSONObject, reason: str) -> None:
        super().__init__()
        self.tool = tool
        self.arguments = arguments
        self.reason = reason

    def compose(self) -> ComposeResult:
        args = json.dumps(self.arguments, ensure_ascii=False, indent=1)
        if len(args) > ARGUMENTS_PREVIEW_CHARS:
            args = args[:ARGUMENTS_PREVIEW_CHARS] + " …"
        with Vertical(id="confirm"):
            yield Static(f"Allow {self.tool}?", id="confirm-title")
            yield Static(self.reason, id="confirm-reason")
            yield Static(args, id="confirm-args")
            with Horizontal(id="confirm-buttons"):
                yield Button("Yes (y)", id="yes", variant="warning")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, allowed: bool) -> None:
        """Answer with a key."""
        self.dismiss(allowed)
