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
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from comal.config import ProviderConfig
from comal.config import WireApi as WireApi
from comal.messages import Finish, JSONObject, Message, ReasoningPart, ToolCallPart, ToolSpec
from comal.usage import Usage

if TYPE_CHECKING:
    import httpx2

    from comal.providers.discovery import DiscoveredWindow
    from comal.providers.http_stream import WireProvider


class Wire(Protocol):
    """What one wire protocol does besides encoding requests and decoding streams.

    Every place that once branched on the wire's name asks its `Wire` instead: the reasoning a
    request may replay, where the server lists its models and with which headers, how its
    window is discovered, and what `comal doctor` suggests. A wire is one module (its adapter,
    decoder and `Wire`) plus its line in `providers/wires.py`.
    """

    @property
    def api(self) -> WireApi:
        """The wire's name, as configurations declare it and stored reasoning carries it."""
        ...

    @property
    def adapter(self) -> type[WireProvider]:
        """The adapter class `make_adapter` builds for a configuration of this wire."""
        ...

    @property
    def versioned_base(self) -> bool:
        """Whether base URLs of this wire end in `/v1` (what `comal doctor` suggests on 404)."""
        ...

    @property
    def fallback(self) -> WireApi:
        """The wire `comal doctor` suggests when a server does not speak this one."""
        ...

    @property
    def lists_served_model(self) -> bool:
        """Whether a configured provider without a model takes the one its server serves."""
        ...

    def replayable(self, part: ReasoningPart) -> bool:
        """Whether a stored reasoning block of this wire holds what the wire needs to accept
        it back (the wire and model match is `replays`' part)."""
        ...

    def models_url(self, base_url: str) -> str:
        """Where a server of this wire lists its models."""
        ...

    def listing_headers(self, api_key: str | None) -> dict[str, str]:
        """The headers of the model listing and discovery requests."""
        ...

    async def discover_window(
        self, cfg: ProviderConfig, client: httpx2.AsyncClient, api_key: str | None, timeout_s: float
    ) -> DiscoveredWindow | None:
        """Ask the configured server for its model's window; None when it does not say."""
        ...


def replays(wire: Wire, part: ReasoningPart, model: str) -> bool:
    """Whether `part` is sent back in a request to `wire` / `model` (see `reasoning.py`)."""
    return part.wire == str(wire.api) and part.model == model and wire.replayable(part)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the configured model can take and produce."""

    context_window: int
    """Tokens the prompt plus the output may use together."""
    max_output_tokens: int
    """Largest output the model accepts as its output limit."""
    window_source: str
    """One of `catalog`, `discovered`, `explicit`, `fallback`."""
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
