"""The input box: Enter sends, Ctrl+J (or Shift+Enter where the terminal reports it) breaks
the line, and pasted text keeps all its lines. Esc asks to cancel the running turn. Up on the
first line recalls the previous prompt of `earlier` and Down on the last line the next one
(back to what was being typed), as in a shell.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from comal.agent.features.mentions import complete_mention

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
        self.earlier: list[str] = []
        """Earlier prompts, oldest first (the app fills it)."""
        self._recalled: int | None = None
        self._draft = ""

    def recall(self, step: int) -> bool:
        """Show the prompt `step` away in `earlier` (-1 older, +1 newer); False at either end."""
        if not self.earlier:
            return False
        at = len(self.earlier) if self._recalled is None else self._recalled
        target = at + step
        if target < 0 or target > len(self.earlier) or target == at:
            return False
        if self._recalled is None:
            self._draft = self.text
        if target == len(self.earlier):
            self._recalled, text = None, self._draft
        else:
            self._recalled, text = target, self.earlier[target]
        self.text = text
        self.move_cursor(self.document.end)
        return True

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
                self._recalled = None
                self.post_message(self.Submitted(text))
            return
        row = self.cursor_location[0]
        if event.key == "up" and row == 0 and self.recall(-1):
            event.stop()
            event.prevent_default()
            return
        if event.key == "down" and row == self.document.line_count - 1 and self.recall(+1):
            event.stop()
            event.prevent_default()
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
