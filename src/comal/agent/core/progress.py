"""The working line both front ends show while a turn runs, folded from the event stream.

`Working` is fed every `AgentEvent` of the turn and the current time; `line(now)` renders

    ⠹ Bash pytest -q · 31s · ↑ 3,204 ↓ 410 tokens · esc to interrupt

(the spinner frame follows the clock; elapsed is the turn's; `↑` the input tokens the turn's
model calls took — measured where the server said, else estimated — and `↓` their output, the
running reply's counted by its streamed text until the server reports it). While a call runs,
its command leads the line and `tail` holds the last lines of its output as it grows. Pure and
clock-injected, so the TUI, the headless stderr line and the tests render the same thing.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from comal.agent.core.events import (
    AgentEvent,
    AssistantReplied,
    ChildActivity,
    ReasoningStreamed,
    TextStreamed,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnStarted,
)

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
FRAME_S = 0.1
"""Seconds per spinner frame."""
TAIL_LINES = 3
"""Output lines of the running call kept for the view."""
CHARS_PER_TOKEN = 4
"""Streamed characters per output token, until the server reports the count."""
CALL_CHARS = 32
"""A running call's summary is clipped to this on the line, so its output tail fits after it."""
_TAIL_CHARS = 4096


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:,}"


def _elapsed(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


@dataclass(slots=True)
class Working:
    """What the running turn is doing, as of the last event.

    Args:
        started_at: when the turn started (the clock `line` is given).
        interrupt: the key that stops it, as the line names it.
    """

    started_at: float
    interrupt: str = "esc"
    tokens_in: int = 0
    tokens_out: int = 0
    pending_in: int = 0
    """The running model call's estimated input (until its reply reports the measured one)."""
    streamed_chars: int = 0
    """Text and reasoning of the running model call, counted until its reply is recorded."""
    call: str | None = None
    """The running call's summary (`Bash pytest -q`), None between calls."""
    call_id: str | None = None
    _output: str = ""
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))

    def apply(self, event: AgentEvent) -> None:
        """Fold one event in (a child's activity counts as the turn's own)."""
        while isinstance(event, ChildActivity):
            event = event.event
        if isinstance(event, TurnStarted):
            self.pending_in = event.estimated_tokens
            self.streamed_chars = 0
        elif isinstance(event, TextStreamed | ReasoningStreamed):
            self.streamed_chars += len(event.text)
        elif isinstance(event, AssistantReplied):
            measured_in = event.input_tokens
            self.tokens_in += self.pending_in if measured_in is None else measured_in
            out = event.output_tokens
            self.tokens_out += self.streamed_chars // CHARS_PER_TOKEN if out is None else out
            self.pending_in = 0
            self.streamed_chars = 0
        elif isinstance(event, ToolStarted):
            self.call, self.call_id = event.summary, event.call_id
            self._output = ""
            self.tail.clear()
        elif isinstance(event, ToolOutput) and event.call_id == self.call_id:
            self._output = (self._output + event.text)[-_TAIL_CHARS:]
            lines = [ln.rstrip() for ln in self._output.replace("\r", "\n").splitlines()]
            self.tail.clear()
            self.tail.extend(ln for ln in lines if ln.strip())
        elif isinstance(event, ToolFinished) and event.call_id == self.call_id:
            self.call = self.call_id = None
            self._output = ""
            self.tail.clear()

    @property
    def input_tokens(self) -> int:
        """Input tokens so far, the running call's estimate included."""
        return self.tokens_in + self.pending_in

    @property
    def output_tokens(self) -> int:
        """Output tokens so far, the running reply's streamed text included."""
        return self.tokens_out + self.streamed_chars // CHARS_PER_TOKEN

    def line(self, now: float) -> str:
        """The working line at time `now`."""
        spent = max(0.0, now - self.started_at)
        frame = SPINNER[int(spent / FRAME_S) % len(SPINNER)]
        doing = self.call if self.call is not None else "Working"
        if len(doing) > CALL_CHARS:
            doing = doing[: CALL_CHARS - 1] + "…"
        return (
            f"{frame} {doing} · {_elapsed(spent)} · ↑ {_tokens(self.input_tokens)}"
            f" ↓ {_tokens(self.output_tokens)} tokens · {self.interrupt} to interrupt"
        )
