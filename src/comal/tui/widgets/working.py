"""The working line above the input box while a turn runs: spinner, elapsed time, tokens in
and out, the running call's command, and "esc to interrupt" (`comal.agent.core.progress`).

Hidden when no turn runs. Redrawn every spinner frame from the events folded so far, so the
clock moves even while a command prints nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.widgets import Static

from comal.agent.core.events import AgentEvent
from comal.agent.core.progress import FRAME_S, Working


class WorkingLine(Static):
    """One line, shown only while a turn runs."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__("", id="working")
        self.clock = clock
        self.working: Working | None = None
        self.display = False

    def on_mount(self) -> None:
        self.set_interval(FRAME_S, self.redraw)

    def start(self) -> None:
        """A turn started: show the line from zero."""
        self.working = Working(self.clock())
        self.display = True
        self.redraw()

    def apply(self, event: AgentEvent) -> None:
        """Fold one event of the running turn in."""
        if self.working is not None:
            self.working.apply(event)

    def stop(self) -> None:
        """The turn ended: hide the line."""
        self.working = None
        self.display = False

    @property
    def text(self) -> str:
        """What the line shows now ("" when hidden)."""
        return "" if self.working is None else self.working.line(self.clock())

    def redraw(self) -> None:
        """Show the current frame."""
        if self.working is not None:
            self.update(self.text)
