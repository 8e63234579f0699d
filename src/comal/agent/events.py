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
    | ContextActed
    | Notice
    | TurnFinished
    | Failed
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
    ContextActed: "context",
    Notice: "notice",
    TurnFinished: "finished",
    Failed: "failed",
}


def event_to_json(event: AgentEvent) -> JSONObject:
    """The stream-json form of an event: `{"type": name, …fields}`."""
    body: JSONObject = {"type": _TYPE_NAMES[type(event)]}
    body.update(asdict(event))
    return body
