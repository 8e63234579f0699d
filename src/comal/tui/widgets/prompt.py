"""The input box: Enter sends, Ctrl+J (or Shift+Enter where the terminal reports it) breaks
the line, and pasted text keeps all its lines. Esc asks to cancel the running turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from comal.agent.mentions import complete_mention

NEWLINE_KEYS = frozenset({"ctrl+j", "shift+enter", "alt+enter"})


class PromptArea(TextArea):
    """A multi-line input whose Enter key submits."""

    @dataclass
    class Submitted(Message):
        """The user sent the box's text."""

        text: str

    class CancelRequested(Message):
        """Esc was pressed in the box."""

    def __init__(self, workspace: Path | None = None) -> None:
        super().__init__(id="prompt", soft_wrap=True, show_line_numbers=False)
        self.border_title = "message · Enter sends · Ctrl+J new line · @file + Tab · /help"
        self.workspace = workspace
        self.candidates: list[str] = []
        """What the last Tab on an `@` word could complete to (shown in the border)."""

    def _complete(self) -> bool:
        """Tab on an `@path` word: complete it from the workspace; True when it was one."""
        row, column = self.cursor_location
        line = self.document.get_line(row)[:column]
        word = line.split()[-1] if line.strip() and not line.endswith(" ") else ""
        if not word.startswith("@") or self.workspace is None:
            return False
        completed, self.candidates = complete_mention(word, self.workspace)
        if completed != word:
            self.insert(completed[len(word) :])
        shown = "  ".join(self.candidates[:8]) if len(self.candidates) > 1 else ""
        self.border_subtitle = shown
        return True

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
        if event.key == "tab" and self._complete():
            event.stop()
            event.prevent_default()
            return
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            self.post_message(self.CancelRequested())
            return
        await super()._on_key(event)
