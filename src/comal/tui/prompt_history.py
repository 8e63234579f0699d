"""The prompts typed in the TUI, per directory, kept across sessions for Up/Down recall.

One JSON object per line (`{"cwd", "text"}`) in `prompt-history.jsonl` beside the ledger.
Prompts are a convenience, not a record (the ledger has every message as sent): a line that
does not parse is skipped, and a file that cannot be written only stops recall from growing.
"""

from __future__ import annotations

import json
from pathlib import Path

HISTORY_FILE = "prompt-history.jsonl"
RECALL_LIMIT = 500
"""Prompts of one directory offered to Up (the most recent)."""


class PromptHistory:
    """The prompts of one directory, oldest first.

    Args:
        home: Comal's data directory (`Config.home`).
        cwd: the directory whose prompts are recalled.
    """

    def __init__(self, home: Path, cwd: Path) -> None:
        self.path = home / HISTORY_FILE
        self.cwd = str(cwd)
        self.items: list[str] = self._load()

    def _load(self) -> list[str]:
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        found: list[str] = []
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and item.get("cwd") == self.cwd:
                text = item.get("text")
                if isinstance(text, str) and text and (not found or found[-1] != text):
                    found.append(text)
        return found[-RECALL_LIMIT:]

    def add(self, text: str) -> str | None:
        """Remember `text` (not twice in a row); the reason when it could not be saved."""
        if not text.strip() or (self.items and self.items[-1] == text):
            return None
        self.items.append(text)
        line = json.dumps({"cwd": self.cwd, "text": text}, ensure_ascii=False)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError as exc:
            return f"prompt history not saved: {exc.strerror or exc} ({self.path})"
        return None
