"""Front ends for headless runs: plain text, a final JSON object, or one JSON event per line.

All three consume the same `AgentEvent` stream. Plain text prints the final answer on stdout
(what `comal -p … > answer.txt` should capture); progress lines go to stderr when stderr is a
terminal, and with `verbose` the model's running commentary too; warnings and errors always do.
`json` prints one object at the end; `stream-json` prints every event as it happens (documented
in the README), except the running output of a call (`ToolOutput`, progress only). Every
failure, early ones included, reaches stdout in the JSON formats.

With `live` (text mode, stderr a terminal) a working line (`comal.agent.core.progress`) sits at the
bottom of stderr while a turn runs, redrawn in place (`\r` + clear line) as events arrive and on
`tick()`: spinner, elapsed time, tokens in and out, the running command and its last output
line. Every other line clears it first and it is drawn again after, so nothing is overwritten.

Text written to a terminal is made safe first (`terminal_safe`): what the model writes (its
answer, its commentary, the commands it asks for) cannot set the window title, clear the
screen, move the cursor or hide a line behind a carriage return. Piped output is left exact.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TextIO

from comal.agent.core.events import (
    AgentEvent,
    AssistantReplied,
    ChildActivity,
    ChildFinished,
    ChildStarted,
    ContextActed,
    Failed,
    Notice,
    Refused,
    ResponseDiscarded,
    SessionOpened,
    TextStreamed,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
    event_to_json,
    failure_reason,
    progress_line,
    running_output,
)
from comal.agent.core.progress import FRAME_S, Working
from comal.errors import ComalError, RefusedError
from comal.messages import JSONObject

_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), *range(0x7F, 0xA0)] if chr(c) not in "\n\t"}


def terminal_safe(text: str) -> str:
    """`text` with every control character but newline and tab shown as `\\xNN`.

    ESC (and so every escape sequence), the 8-bit CSI and OSC introducers, BEL, backspace and a
    lone carriage return are made visible; a CRLF line end becomes a newline.
    """
    return text.replace("\r\n", "\n").translate(_CONTROL)


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


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
    verbose: bool = False
    """Text mode: every progress line and the commentary, even when stderr is not a terminal."""
    progress: bool = True
    """Text mode: show progress lines (the CLI sets it when stderr is a terminal)."""
    shorten: Callable[[str], str] = str
    """A session id as people type it (the CLI passes the ledger's short ids)."""
    live: bool = False
    """Text mode: keep a working line at the bottom of stderr while a turn runs (a terminal)."""
    clock: Callable[[], float] = time.monotonic
    columns: Callable[[], int] = lambda: shutil.get_terminal_size((80, 24)).columns
    """The terminal's width: the working line is clipped to it, so it never wraps."""
    _working: Working | None = None
    _drawn: bool = False
    _drawn_at: float = float("-inf")
    out_tty: bool | None = None
    """`out` is a terminal: text written there goes through `terminal_safe` (None: ask it)."""
    err_tty: bool | None = None
    """`err` is a terminal: likewise."""
    _mid_line: bool = False
    _said_sandbox: bool = False

    def __post_init__(self) -> None:
        if self.out_tty is None:
            self.out_tty = _is_terminal(self.out)
        if self.err_tty is None:
            self.err_tty = _is_terminal(self.err)

    def _out(self, text: str) -> str:
        return terminal_safe(text) if self.out_tty else text

    def _err(self, text: str) -> str:
        return terminal_safe(text) if self.err_tty else text

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, SessionOpened):
            self.session_id = event.session_id
        if isinstance(event, AssistantReplied):
            self.steps += 1
        if running_output(event):
            if self._working is not None:
                self._working.apply(event)
                if self.clock() - self._drawn_at >= FRAME_S:
                    self.tick()  # a flood of output redraws at most once a frame
            return  # progress only: never printed as a line nor in the JSON formats
        if self.fmt == "stream-json":
            self.out.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
            self.out.flush()
            return
        if self.fmt == "json":
            self.events.append(event)
            return
        self._follow(event)
        self._plain(event)
        self.tick()

    def _follow(self, event: AgentEvent) -> None:
        """Start, feed or end the working line."""
        if not (self.live and self.fmt == "text"):
            return
        if isinstance(event, TurnStarted) and self._working is None:
            self._working = Working(self.clock(), interrupt="ctrl+c")
        if isinstance(event, TurnFinished | Failed | Refused):
            self._working = None
            self._clear()
        elif self._working is not None:
            self._working.apply(event)

    def _clear(self) -> None:
        if self._drawn:
            self.err.write("\r\x1b[2K")
            self._drawn = False

    def tick(self) -> None:
        """Redraw the working line (the spinner and elapsed time move on)."""
        working = self._working
        if working is None or self._mid_line:
            return
        text = working.line(self.clock())
        if working.tail:
            text += f" · │ {working.tail[-1].strip()}"
        width = self.columns() - 1
        if len(text) > width:
            text = text[: max(0, width - 1)] + "…"
        # The command and its output come from the model and the program: made safe, or a
        # control sequence in them would move the cursor out of the line.
        self.err.write("\r\x1b[2K" + terminal_safe(text))
        self.err.flush()
        self._drawn = True
        self._drawn_at = self.clock()

    @contextlib.asynccontextmanager
    async def ticking(self) -> AsyncIterator[None]:
        """Redraw the working line every frame while the body runs (live text mode only)."""
        if not (self.live and self.fmt == "text"):
            yield
            return

        async def tick_forever() -> None:
            while True:
                await asyncio.sleep(FRAME_S)
                self.tick()

        task = asyncio.create_task(tick_forever())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self._working = None
            self._clear()
            self.err.flush()

    def _line(self, text: str, *, always: bool = False) -> None:
        if not (always or self.progress or self.verbose):
            return
        self._clear()
        if self._mid_line:
            self.err.write("\n")
            self._mid_line = False
        self.err.write(self._err(text) + "\n")
        self.err.flush()

    def _plain(self, event: AgentEvent) -> None:
        if isinstance(event, TextStreamed):
            if self.verbose:
                self._clear()
                self.err.write(self._err(event.text))
                self.err.flush()
                self._mid_line = not event.text.endswith("\n")
        elif isinstance(event, SessionOpened):
            verb = "resumed" if event.resumed else "started"
            # Without a sandbox the first line is always shown, and says so.
            self._line(
                f"● session {self.shorten(event.session_id)} {verb} ({event.session_id})"
                f" · {event.provider}/{event.model}"
                f" · window {event.window_tokens:,} ({event.window_source})"
                + (f" · ⚠ {event.sandbox}" if event.sandbox else ""),
                always=bool(event.sandbox),
            )
            self._said_sandbox = bool(event.sandbox)
        elif isinstance(event, ToolStarted):
            self._line(f"  → {event.summary}")
        elif isinstance(event, ToolFinished):
            code = "" if event.exit_code is None else f" · exit {event.exit_code}"
            self._line(
                f"  ← {event.name} {event.status}{code} · {event.size_bytes:,} bytes"
                f"{failure_reason(event)}"
            )
        elif isinstance(event, ContextActed):
            number = f" #{event.checkpoint_number}" if event.checkpoint_number else ""
            self._line(f"  ◆ context: {event.action}{number} → ~{event.after_tokens:,} tokens")
        elif isinstance(event, ResponseDiscarded):
            self._line(
                f"  ! response discarded ({event.reason}); output reserve now"
                f" {event.new_output_reserve:,}"
            )
        elif isinstance(event, Refused):
            if event.text:
                self._clear()
                self.out.write(("\n" if self._mid_line else "") + self._out(event.text) + "\n")
                self.out.flush()
                self._mid_line = False
            # Like a failure, a refusal is the run's outcome, not progress: always said.
            reason = f": {event.reason}" if event.reason else ""
            self._line(f"⊘ refused{reason} (not an answer)", always=True)
        elif isinstance(event, Notice):
            if not (self._said_sandbox and event.message.startswith("no sandbox: ")):
                self._line(f"  ! {event.code}: {event.message}", always=True)
        elif isinstance(event, Failed):
            self._line(
                f"✗ {event.code}: {event.message}"
                f" (session {self.shorten(event.session_id)} is resumable)",
                always=True,
            )
        elif isinstance(event, ChildStarted):
            self._line(f"  ⤷ child {self.shorten(event.session_id)} · {event.description}")
        elif isinstance(event, ChildFinished):
            again = " (receipt read back, not run again)" if event.rebuilt else ""
            self._line(f"  ⤶ child {self.shorten(event.session_id)} {event.status}{again}")
        elif isinstance(event, ChildActivity):
            self._child(event)
        elif isinstance(event, TurnFinished) and self._mid_line:
            self.err.write("\n")
            self._mid_line = False

    def _child(self, activity: ChildActivity) -> None:
        """A child's tool calls, indented under it (its text stays in its own ledger)."""
        event: AgentEvent = activity.event
        tag = activity.session_id
        while isinstance(event, ChildActivity):  # a grandchild's, shown under its own id
            tag = event.session_id
            event = event.event
        tag = self.shorten(tag)
        line = progress_line(event)
        if line is not None:
            self._line(f"    [{tag}] {line}")

    def _json_object(
        self,
        session_id: str | None,
        status: str,
        answer: str,
        error: ComalError | None,
        cost: JSONObject | None = None,
    ) -> None:
        body = {
            "session_id": session_id,
            "status": status,
            "answer": answer,
            "steps": self.steps,
            "error": None if error is None else {"code": error.code, "message": error.message},
            "cost": cost,
            "events": [event_to_json(e) for e in self.events],
        }
        if isinstance(error, RefusedError):
            body["refusal"] = {"text": error.text, "reason": error.reason}
        self.out.write(json.dumps(body, ensure_ascii=False) + "\n")
        self.out.flush()

    def finish(
        self,
        *,
        session_id: str,
        status: str,
        answer: str,
        error: ComalError | None,
        cost: JSONObject | None = None,
        cost_line: str = "",
    ) -> None:
        """Print the answer (text), the closing object (json), or nothing more (stream-json).

        `cost` is the session's cost object (`session/cost.py`) and `cost_line` its one-line form.
        """
        if self.fmt == "json":
            self._json_object(session_id, status, answer, error, cost)
        elif self.fmt == "text":
            self._working = None
            self._clear()
            if answer:
                answer = self._out(answer)
                self.out.write(answer if answer.endswith("\n") else answer + "\n")
                self.out.flush()
            tail = f" · {cost_line}" if cost_line else ""
            self._line(f"session {self.shorten(session_id)} · {status}{tail}", always=True)

    def fail(self, error: ComalError) -> None:
        """Report a failure that ended the run before (or outside) the turn's own reporting."""
        if self.fmt == "json":
            self._json_object(self.session_id, "failed", "", error)
        elif self.fmt == "stream-json":
            body = {
                "type": "failed",
                "session_id": self.session_id,
                "code": error.code,
                "message": error.message,
            }
            self.out.write(json.dumps(body, ensure_ascii=False) + "\n")
            self.out.flush()
        self._line(f"comal: {error}", always=True)
