"""Server-sent events: line parsing and the drive loop shared by every adapter.

Parsing follows the WHATWG rules that matter here: `field: value` lines (one leading space
stripped), `:` comments ignored, a blank line dispatches the event, several `data:` lines are
joined with newlines, and an event still open when the stream ends is discarded (it was cut).
Adapters implement `StreamDecoder`: `feed` turns one event into provider events and `end` checks
that the stream reached its terminal event, raising `NetworkError` when it was cut. Nothing but
`ComalError` subclasses leaves `drive` / `adrive`: unexpected decoder bugs on hostile input are
wrapped as `InvalidRequestError` so a malformed reply can never crash the caller.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from comal.errors import ComalError, EmptyStreamError, InvalidRequestError, NetworkError
from comal.messages import JSONObject, JSONValue
from comal.providers.base import Completed, ProviderEvent


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its `event:` name (None when absent) and joined data."""

    event: str | None
    data: str


@dataclass(slots=True)
class SseParser:
    """Incremental line parser; feed lines without their line terminators."""

    _event: str | None = None
    _data: list[str] = field(default_factory=list)

    def feed_line(self, line: str) -> SseEvent | None:
        """Consume one line; return the event a blank line completes, if any."""
        line = line.rstrip("\r\n")
        if line == "":
            if not self._data and self._event is None:
                return None
            event = SseEvent(self._event, "\n".join(self._data))
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        # `id:` and `retry:` carry nothing the adapters use.
        return None

    @property
    def pending(self) -> bool:
        """Whether an event was started but not completed (a cut if the stream ends here)."""
        return bool(self._data) or self._event is not None


def iter_sse(lines: Iterable[str]) -> Iterator[SseEvent]:
    """Parse complete events from lines; a trailing unterminated event is dropped."""
    parser = SseParser()
    for line in lines:
        event = parser.feed_line(line)
        if event is not None:
            yield event


class StreamDecoder(Protocol):
    """Turns SSE events of one wire into provider events."""

    def feed(self, event: SseEvent) -> list[ProviderEvent]:
        """Decode one event. Raises ProviderError for error events or malformed data."""
        ...

    def end(self) -> list[ProviderEvent]:
        """The stream ended: flush what is complete or raise NetworkError if it was cut."""
        ...


class WireDecoder(StreamDecoder, Protocol):
    """A wire's stream decoder class: built for the model that answers."""

    def __init__(self, model: str) -> None: ...


def parse_json_object(data: str, what: str) -> JSONObject:
    """Decode an event's data as a JSON object.

    Raises:
        InvalidRequestError: the data is not a JSON object (a malformed reply).
    """
    try:
        value: JSONValue = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InvalidRequestError(f"malformed {what} event (not JSON): {data[:200]!r}") from exc
    if not isinstance(value, dict):
        raise InvalidRequestError(f"malformed {what} event (not an object): {data[:200]!r}")
    return value


def _guarded(decoder: StreamDecoder, event: SseEvent | None) -> list[ProviderEvent]:
    try:
        return decoder.end() if event is None else decoder.feed(event)
    except ComalError:
        raise
    except Exception as exc:  # hostile input must surface as a typed error, never a crash
        raise InvalidRequestError(f"malformed stream: {type(exc).__name__}: {exc}") from exc


class _Run:
    """One decoding run, line by line, shared by `drive` and `adrive`: stops after `Completed`."""

    def __init__(self, decoder: StreamDecoder) -> None:
        self._decoder = decoder
        self._parser = SseParser()
        self._seen = False
        self.done = False
        """True once `Completed` was decoded: nothing after it is read."""

    def line(self, line: str) -> list[ProviderEvent]:
        """The events a line completes, up to and including `Completed`."""
        event = self._parser.feed_line(line)
        if event is None:
            return []
        self._seen = True
        out: list[ProviderEvent] = []
        for item in _guarded(self._decoder, event):
            out.append(item)
            if isinstance(item, Completed):
                self.done = True
                break
        return out

    def end(self) -> list[ProviderEvent]:
        """The lines ran out before `Completed`: see `_end`."""
        return _end(self._decoder, self._parser, self._seen)


def drive(lines: Iterable[str], decoder: StreamDecoder) -> Iterator[ProviderEvent]:
    """Run a decoder over lines; stops after `Completed`."""
    run = _Run(decoder)
    for line in lines:
        yield from run.line(line)
        if run.done:
            return
    yield from run.end()


class BodyDecoder(Protocol):
    """Decode a whole SSE body of one wire (pure), for `model` (see `decoding`)."""

    def __call__(self, lines: Iterable[str], *, model: str = "") -> Iterator[ProviderEvent]: ...


def decoding(decoder_type: type[WireDecoder]) -> BodyDecoder:
    """A wire's `decode_stream`: `drive` over a whole body with a fresh decoder of the model.

    The function it returns raises ProviderError for error events, malformed data, or a stream
    cut before it finished.
    """

    def decode_stream(lines: Iterable[str], *, model: str = "") -> Iterator[ProviderEvent]:
        return drive(lines, decoder_type(model))

    return decode_stream


async def adrive(
    lines: AsyncIterator[str], decoder: StreamDecoder
) -> AsyncGenerator[ProviderEvent, None]:
    """`drive` over a live response body (same decoder, same rules)."""
    run = _Run(decoder)
    async for line in lines:
        for out in run.line(line):
            yield out
        if run.done:
            return
    for out in run.end():
        yield out


def _end(decoder: StreamDecoder, parser: SseParser, seen: bool) -> list[ProviderEvent]:
    if not seen and not parser.pending:
        raise EmptyStreamError("the server sent an empty event stream (no event at all)")
    events = _guarded(decoder, None)
    if not any(isinstance(e, Completed) for e in events):
        cut = " mid-event" if parser.pending else ""
        raise NetworkError(f"stream ended early{cut}: the connection closed before the reply")
    return events
