"""The status bar: model, context use, session id and what Comal is doing.

Context use follows the budget's rule: `ctx ~N` is an estimate, a measured base is written out,
and an unknown count is `ctx ? / W` — never 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.widgets import Static


@dataclass(frozen=True, slots=True)
class StatusLine:
    """Everything the bar shows."""

    model: str
    window_tokens: int
    used_tokens: int | None = None
    measured: bool = False
    session_id: str | None = None
    """The session's short id, as `comal sessions` shows it."""
    activity: str = "idle"

    def render_text(self) -> str:
        """The bar's text."""
        if self.used_tokens is None:
            ctx = f"ctx ? / {self.window_tokens:,}"
        else:
            share = round(100 * self.used_tokens / self.window_tokens) if self.window_tokens else 0
            amount = f"{self.used_tokens:,}" if self.measured else f"~{self.used_tokens:,}"
            base = " measured base" if self.measured else ""
            ctx = f"ctx {amount} / {self.window_tokens:,} ({share}%{base})"
        session = self.session_id or "new session"
        return f" {self.model} · {ctx} · {session} · {self.activity}"


class StatusBar(Static):
    """One line at the bottom of the screen."""

    def __init__(self, line: StatusLine) -> None:
        super().__init__(line.render_text(), id="status")
        self.line = line

    def show(self, line: StatusLine) -> None:
        """Redraw with `line`."""
        self.line = line
        self.update(line.render_text())
