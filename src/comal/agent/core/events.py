"""Typed agent events: the one stream every front end (plain text, JSON lines, TUI) consumes.

Events are past-tense facts about a running session. They carry plain values only, so a
renderer never needs to reach into the engine, and `to_json` gives the documented
stream-json shape (`{"type": …, …}`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from comal.messages import JSONObject


@dataclass(frozen=True, slots=True)
class SessionOpened:
    """A session is ready: new, or resumed from the ledger."""

    session_id: str
    model: str
    provider: str
    window_tokens: int
    window_source: str
    resumed: bool
    sandbox: str = ""
    """Why Bash runs unconfined or is refused (bubblewrap missing or unusable), said on the
    session's first line; empty when Bash is confined, not offered, or `full-access` chose it."""


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A model call is about to be made."""

    step: int
    estimated_tokens: int
    measured_base: bool
    output_reserve: int


@dataclass(frozen=True, slots=True)
class TextStreamed:
    """A piece of assistant text arrived."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningStreamed:
    """A piece of provider reasoning arrived (shown dimmed, never required)."""

    text: str


@dataclass(frozen=True, slots=True)
class AssistantReplied:
    """A complete assistant message was recorded."""

    text: str
    tool_calls: int
    finish: str
    input_tokens: int | None
    output_tokens: int | None


@dataclass(frozen=True, slots=True)
class Refused:
    """The model declined the task; `text` is what it said, `reason` the wire's explanation."""

    text: str
    reason: str


@dataclass(frozen=True, slots=True)
class ResponseDiscarded:
    """An incomplete response (OUTPUT_LENGTH) was recorded as discarded; none of its calls ran."""

    reason: str
    new_output_reserve: int


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call passed its permission check and its write-ahead receipt is durable."""

    call_id: str
    name: str
    summary: str


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call's result was recorded."""

    call_id: str
    name: str
    status: str
    exit_code: int | None
    size_bytes: int
    preview: str


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A running call's output grew (Bash): the new text, for the front ends' progress only.

    Never recorded (the result is, whole) and not part of the JSON formats: a view of work in
    progress, like the spinner.
    """

    call_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ContextActed:
    """The context engine projected results or derived a checkpoint before a call."""

    action: str
    before_tokens: int | None
    after_tokens: int
    checkpoint_number: int | None


@dataclass(frozen=True, slots=True)
class Notice:
    """A warning or recovery step worth showing (retries, recalibration, recovered calls)."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The turn ended with a final answer (or the session was already finished)."""

    session_id: str
    answer: str
    steps: int
    status: str


@dataclass(frozen=True, slots=True)
class Failed:
    """The turn stopped on an error; the session stays resumable."""

    session_id: str
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class ChildStarted:
    """A child session (sub-agent) started or resumed for one call of its parent."""

    session_id: str
    parent_id: str
    call_id: str
    description: str
    window_tokens: int


@dataclass(frozen=True, slots=True)
class ChildFinished:
    """A child session's receipt was recorded (or rebuilt from the ledger)."""

    session_id: str
    parent_id: str
    call_id: str
    status: str
    input_tokens: int | None
    output_tokens: int | None
    rebuilt: bool


@dataclass(frozen=True, slots=True)
class ChildActivity:
    """An event of a running child session, tagged with the child's session id."""

    session_id: str
    call_id: str
    event: AgentEvent
    """The child's event (itself a `ChildActivity` for a grandchild's)."""


AgentEvent = (
    SessionOpened
    | TurnStarted
    | TextStreamed
    | ReasoningStreamed
    | AssistantReplied
    | Refused
    | ResponseDiscarded
    | ToolStarted
    | ToolFinished
    | ToolOutput
    | ContextActed
    | Notice
    | TurnFinished
    | Failed
    | ChildStarted
    | ChildFinished
    | ChildActivity
)

_TYPE_NAMES: dict[type, str] = {
    SessionOpened: "session_opened",
    TurnStarted: "turn_started",
    TextStreamed: "text",
    ReasoningStreamed: "reasoning",
    AssistantReplied: "assistant",
    Refused: "refused",
    ResponseDiscarded: "response_discarded",
    ToolStarted: "tool_started",
    ToolFinished: "tool_finished",
    ToolOutput: "tool_output",
    ContextActed: "context",
    Notice: "notice",
    TurnFinished: "finished",
    Failed: "failed",
    ChildStarted: "child_started",
    ChildFinished: "child_finished",
    ChildActivity: "child",
}


def event_to_json(event: AgentEvent) -> JSONObject:
    """The stream-json form of an event: `{"type": name, …fields}`."""
    body: JSONObject = {"type": _TYPE_NAMES[type(event)]}
    if isinstance(event, ChildActivity):
        # The child's own event keeps its shape; the wrapper names the child session.
        body.update(
            {"session_id": event.session_id, "call_id": event.call_id}
            | {"event": event_to_json(event.event)}
        )
        return body
    body.update(asdict(event))
    return body


def running_output(event: AgentEvent) -> bool:
    """Whether `event` is a running call's output (a child's too): progress only, never shown
    as a line nor written in the JSON formats."""
    while isinstance(event, ChildActivity):
        event = event.event
    return isinstance(event, ToolOutput)


REASON_CHARS = 160
"""How much of a failed call's reason a progress line shows."""


def failure_reason(event: ToolFinished) -> str:
    """` · reason` for a call that failed or was denied (the first line of what the model was
    told, clipped to one line), "" for any other call."""
    if event.status not in ("error", "denied", "timeout", "cancelled", "uncertain"):
        return ""
    line = next((ln.strip() for ln in event.preview.splitlines() if ln.strip()), "")
    if not line:
        return ""
    if len(line) > REASON_CHARS:
        line = line[: REASON_CHARS - 1] + "…"
    return f" · {line}"


def progress_line(event: AgentEvent) -> str | None:
    """A tool call or failure as one line of progress, the same in both front ends: `→ summary`
    when it starts, `← name status` when its receipt is recorded, `✗ CODE: message`. None for
    any other event."""
    if isinstance(event, ToolStarted):
        return f"→ {event.summary}"
    if isinstance(event, ToolFinished):
        return f"← {event.name} {event.status}{failure_reason(event)}"
    if isinstance(event, Failed):
        return f"✗ {event.code}: {event.message}"
    return None
