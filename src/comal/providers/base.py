"""The provider contract: wire APIs, capabilities, model requests and the typed stream events.

A provider is a declared wire protocol plus configuration (never guessed). Every adapter turns a
`ModelRequest` into the exact request bytes of its wire (`encode`), and POSTs those bytes as
they are (`send` takes the `EncodedRequest`, never re-encodes), so what is recorded of a request
and what is sent are one value. The answer streams as `ProviderEvent`s, in stream order; a
well-formed stream always ends with exactly one `Completed`, preceded by at most one
`UsageReport` per wire message. Failures are raised as `comal.errors.ProviderError`
subclasses, never as transport or JSON exceptions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeAlias, runtime_checkable

from comal.messages import Finish, JSONObject, Message, ReasoningPart, ToolCallPart, ToolSpec
from comal.usage import Usage


class WireApi(StrEnum):
    """The wire protocols Comal speaks."""

    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"
    ANTHROPIC_MESSAGES = "anthropic-messages"


WINDOW_SOURCES = ("catalog", "discovered", "explicit", "fallback")
"""Where a context window figure came from, from most to least specific provenance."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the configured model can take and produce."""

    context_window: int
    """Tokens the prompt plus the output may use together."""
    max_output_tokens: int
    """Largest output the model accepts as its output limit."""
    window_source: str
    """One of `catalog`, `discovered`, `explicit`, `fallback`."""
    parallel_tool_calls: bool = True
    vision: bool = False
    window_note: str = ""
    """Where exactly the figure came from (catalog source, discovery endpoint), for people."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call sends, independent of the wire."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int = 4096
    reasoning_effort: str | None = None
    """`low`, `medium` or `high`; None leaves the provider's default."""


@dataclass(frozen=True, slots=True)
class EncodedRequest:
    """A request and the exact bytes of its body: hashed into the ledger and POSTed as is."""

    request: ModelRequest
    """What the bytes encode (the decoder reads the model from it)."""
    body: bytes
    """The body `send()` POSTs, byte for byte."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of assistant text."""

    text: str


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    """A piece of a refusal the wire marks as such (Chat `delta.refusal`, Responses refusal
    parts); kept apart from answer text so a refusal is never reported as an answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of provider reasoning, or the close of a reasoning block.

    `part` is set only on the event that closes a reasoning block: it holds the complete block
    exactly as it must be stored and replayed (signature, encrypted content, item id). Its
    `text` is the whole block, so consumers that accumulate deltas start a new block after it.
    """

    text: str
    part: ReasoningPart | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDone:
    """A complete tool call whose arguments parsed as a JSON object."""

    call: ToolCallPart


@dataclass(frozen=True, slots=True)
class ToolCallInvalid:
    """A tool call whose arguments are not a JSON object; kept raw, never executed."""

    call_id: str
    name: str
    raw_arguments: str
    error: str


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Normalized usage plus the raw usage JSON of the wire (for the ledger)."""

    usage: Usage
    raw: JSONObject


@dataclass(frozen=True, slots=True)
class Completed:
    """The end of a well-formed stream."""

    finish: Finish
    raw_finish: str | None
    """The wire's own value (`end_turn`, `incomplete:max_output_tokens`, …)."""
    details: JSONObject | None = None
    """The wire's own explanation of the finish, when it sends one (Anthropic `stop_details`)."""


@dataclass(frozen=True, slots=True)
class Resent:
    """The request went out again with other bytes: `body`, POSTed as is.

    `reason`: `probe` (asked once unstreamed, one output token, to learn why a stream came back
    empty) or `unstreamed` (sent again without streaming; the events that follow are its
    reply). The caller records it beside the request, so the ledger holds every body posted.
    """

    body: bytes
    reason: str


ProviderEvent: TypeAlias = (
    Resent
    | TextDelta
    | RefusalDelta
    | ReasoningDelta
    | ToolCallDone
    | ToolCallInvalid
    | UsageReport
    | Completed
)


class Provider(Protocol):
    """A configured model behind one wire API."""

    name: str
    wire: WireApi
    model: str
    capabilities: Capabilities

    def encode(self, request: ModelRequest) -> bytes:
        """The request body bytes of the wire (pure: equal requests give equal bytes)."""
        ...

    def send(self, encoded: EncodedRequest) -> AsyncIterator[ProviderEvent]:
        """Send exactly `encoded.body` and yield the events of the answer.

        Raises:
            ProviderError: a subclass from `comal.errors` for every failure.
        """
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """`send(encode_request(self, request))`: for callers that record nothing of it."""
        ...


def encode_request(provider: Provider, request: ModelRequest) -> EncodedRequest:
    """The request with its body encoded once, to be recorded and sent as one value."""
    return EncodedRequest(request, provider.encode(request))


@runtime_checkable
class CountsTokens(Protocol):
    """A provider whose server can count a request's input tokens exactly before it is sent."""

    async def count_input_tokens(self, request: ModelRequest) -> int | None:
        """The server's own count of the request's input, or None when it does not offer one.

        Never raises: counting is best effort.
        """
        ...
