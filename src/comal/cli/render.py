"""Front ends for headless runs: plain text, a final JSON object, or one JSON event per line.

All three consume the same `AgentEvent` stream. Plain text streams the assistant's words to
stdout and progress to stderr; `json` prints one object at the end; `stream-json` prints every
event as it happens (documented in the README).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import TextIO

from comal.agent.events import (
    AgentEvent,
    AssistantReplied,
    ContextActed,
    Failed,
    Notice,
    ResponseDiscarded,
    SessionOpened,
    TextStreamed,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    event_to_json,
)
from comal.errors import ComalError
from comal.messages import JSONObject


@dataclass(slots=True)
class Renderer:
    """Renders events in one output format."""

    fmt: str
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    session_id: str | None = None
    answer: str = ""
    steps: int = 0
    events: list[AgentEvent] = field(default_factory=list)
    _mid_line: bool = False

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, SessionOpened):
            self.session_id = event.session_id
        if isinstance(event, AssistantReplied):
            self.steps += 1
        if self.fmt == "stream-json":
            self.out.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
            self.out.flush()
            return
        if self.fmt == "json":
            self.events.append(event)
            return
        self._plain(event)

    def _line(self, text: str) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False
        self.err.write(text + "\n")
        self.err.flush()

    def _plain(self, event: AgentEvent) -> None:
        if isinstance(event, TextStreamed):
            self.out.write(event.text)
            self.out.flush()
            self._mid_line = not event.text.endswith("\n")
        elif isinstance(event, SessionOpened):
            verb = "resumed" if event.resumed else "started"
            self._line(
                f"● session {event.session_id} {verb} · {event.provider}/{event.model}"
                f" · window {event.window_tokens:,} ({event.window_source})"
            )
        elif isinstance(event, ToolStarted):
            self._line(f"  → {event.summary}")
        elif isinstance(event, ToolFinished):
            code = "" if event.exit_code is None else f" · exit {event.exit_code}"
            self._line(f"  ← {event.name} {event.status}{code} · {event.size_bytes:,} bytes")
        elif isinstance(event, ContextActed):
            number = f" #{event.checkpoint_number}" if event.checkpoint_number else ""
            self._line(f"  ◆ context: {event.action}{number} → ~{event.after_tokens:,} tokens")
        elif isinstance(event, ResponseDiscarded):
            self._line(
                f"  ! response discarded ({event.reason}); output reserve now"
                f" {event.new_output_reserve:,}"
            )
        elif isinstance(event, Notice):
            self._line(f"  ! {event.code}: {event.message}")
        elif isinstance(event, Failed):
            self._line(f"✗ {event.code}: {event.message} (session {event.session_id} is resumable)")
        elif isinstance(event, TurnFinished) and self._mid_line:
            self.out.write("\n")
            self._mid_line = False

    def finish(
        self,
        *,
        session_id: str,
        status: str,
        answer: str,
        error: ComalError | None,
        cost: JSONObject | None = None,
    ) -> None:
        """Print the closing object (json format) or nothing more (other formats)."""
        if self.fmt != "json":
            return
        body = {
            "session_id": session_id,
            "status": status,
            "answer": answer,
            "steps": self.steps,
            "error": None if error is None else {"code": error.code, "message": error.message},
            "cost": cost,
            "events": [event_to_json(e) for e in self.events],
        }
        self.out.write(json.dumps(body, ensure_ascii=False) + "\n")
        self.out.flush()
