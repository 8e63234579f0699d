"""Child sessions in the transcript: one collapsible panel per child, with its own meter.

A panel opens on `ChildStarted`, shows the child's tool calls and notices as they arrive
(`ChildActivity`), keeps a context meter of the child's own window (its latest request's
estimate against its window), and closes with the receipt's status on `ChildFinished`. It
renders only what the events say; the child's text stays in its own ledger session.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Collapsible, Static

from comal.agent.core.events import (
    AgentEvent,
    ChildActivity,
    ChildFinished,
    ChildStarted,
    Notice,
    ToolFinished,
    ToolStarted,
    TurnStarted,
    progress_line,
)


class ChildPanel(Collapsible):
    """One child session: its activity lines under a title with status and context meter."""

    def __init__(self, started: ChildStarted) -> None:
        self.session_id = started.session_id
        self.description = started.description
        self.window_tokens = started.window_tokens
        self.used_tokens: int | None = None
        self.status = "running"
        self.lines: list[str] = []
        self._body = Static("", classes="child-body")
        super().__init__(self._body, title=self._heading(), collapsed=False, classes="child")

    def _heading(self) -> str:
        used = "ctx ~?" if self.used_tokens is None else f"ctx ~{self.used_tokens:,}"
        share = (
            ""
            if self.used_tokens is None or not self.window_tokens
            else f" ({100 * self.used_tokens / self.window_tokens:.0f} %)"
        )
        return (
            f"child {self.session_id[:8]} · {self.description} · {self.status} · {used}"
            f" / {self.window_tokens:,}{share}"
        )

    def _add(self, line: str) -> None:
        self.lines.append(line)
        self._body.update(Text("\n".join(self.lines)))

    def apply(self, event: AgentEvent) -> None:
        """Render one of the child's own events."""
        if isinstance(event, TurnStarted):
            self.used_tokens = event.estimated_tokens
            self.title = self._heading()
        elif (line := progress_line(event)) is not None:
            self._add(line)
        elif isinstance(event, Notice):
            self._add(f"! {event.code}: {event.message}")
        elif isinstance(event, ChildStarted):
            self._add(f"⤷ child {event.session_id[:8]} · {event.description}")
        elif isinstance(event, ChildFinished):
            self._add(f"⤶ child {event.session_id[:8]} {event.status}")
        elif isinstance(event, ChildActivity):
            inner = event.event
            if isinstance(inner, ToolStarted | ToolFinished):
                label = inner.summary if isinstance(inner, ToolStarted) else inner.status
                self._add(f"  [{event.session_id[:8]}] {inner.name}: {label}")

    def finish(self, event: ChildFinished) -> None:
        """The receipt is recorded (or read back): show its status and fold the panel."""
        self.status = event.status + (" (read back)" if event.rebuilt else "")
        self.title = self._heading()
        self.collapsed = True
