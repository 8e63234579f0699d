"""The permission prompt: a modal yes / no / always for a call the policy marked `ask`.

Dismisses with `yes` or `always` only on an explicit answer; Esc and "n" decline, so a stray
key never grants access. `always` (key "a") is offered only with the allow patterns it would
add, which the app writes to the workspace config.
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


class ConfirmScreen(ModalScreen[str]):
    """Asks whether one tool call may run: dismisses with `yes`, `no` or `always`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('yes')", "yes"),
        Binding("n", "answer('no')", "no"),
        Binding("a", "answer('always')", "always"),
        Binding("escape", "answer('no')", "no"),
    ]

    def __init__(
        self, tool: str, arguments: JSONObject, reason: str, always: tuple[str, ...] = ()
    ) -> None:
        super().__init__()
        self.tool = tool
        self.arguments = arguments
        self.reason = reason
        self.always = always
        """Allow patterns "always" would add; empty when none would make this call allowed."""

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
                if self.always:
                    label = "Always allow " + ", ".join(self.always) + " (a)"
                    yield Button(label, id="always", variant="warning")
                yield Button("No (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id or "no")

    def action_answer(self, answer: str) -> None:
        """Answer with a key; `always` counts only when it is offered."""
        if answer == "always" and not self.always:
            return
        self.dismiss(answer if answer in ("yes", "always") else "no")
