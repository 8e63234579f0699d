"""The input box: Enter sends, Ctrl+J (or Shift+Enter where the terminal reports it) breaks
the line, and pasted text keeps all its lines. Esc asks to cancel the running turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.message import Message
from textual.widgets import TextArea

NEWLINE_KEYS = frozenset({"ctrl+j", "shift+enter", "alt+enter"})


class PromptArea(TextArea):
    """A multi-line input whose Enter key submits."""

    @dataclass
    class Submitted(Message):
        """The user sent the box's text."""

        text: str

    class CancelRequested(Message):
        """Esc was pressed in the box."""

    def __init__(self) -> None:
        super().__init__(id="prompt", soft_wrap=True, show_line_numbers=False)
        self.border_title = "message · Enter sends · Ctrl+J new line · /help"

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            text = self.text
            if text.strip():
                self.clear()
                self.post_message(self.Submitted(text))
            return
        if event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            self.post_message(self.CancelRequested())
            return
        await super()._on_key(event)
