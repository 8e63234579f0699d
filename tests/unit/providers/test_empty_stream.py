"""An HTTP 200 stream with no event is asked again without streaming to learn the real error."""

from __future__ import annotations

import json
import socketserver
import threading
from dataclasses import replace
from typing import Any

import httpx2
import pytest

from comal.config import ProviderConfig
from comal.errors import ContextLengthError, EmptyStreamError
from comal.messages import digest_bytes, user_text
from comal.providers.base import Capabilities, ModelRequest, Resent, encode_request
from comal.providers.factory import make_provider
from comal.providers.reply import Reply, collect
from comal.testing.fake_server import FakeServer

CAPS = Capabilities(context_window=8_192, max_output_tokens=512, window_source="explicit")
REQUEST = ModelRequest("fake-model", "sys", (user_text("hello"),), max_output_tokens=512)


async def ask(server: FakeServer, wire: str = "openai-chat", times: int = 1) -> list[Reply]:
    base = server.openai_base_url if wire.startswith("openai") else server.base_url
    cfg = ProviderConfig(name="local", wire=wire, base_url=base, model="fake-model")
    async with httpx2.AsyncClient() as client:
        provider = make_provider(
            cfg, client=client, api_key=None, context_window_override=None, capabilities=CAPS
        )
        return [await collect(provider.stream(REQUEST)) for _ in range(times)]


async def test_the_non_streamed_answer_tells_the_real_error() -> None:
    turns: list[str | dict[str, Any]] = [
        {"text": "never sent", "cut_after_events": 0},
        {"error": "context_length"},
    ]
    with FakeServer(turns) as server:
        with pytest.raises(ContextLengthError):
            await ask(server)
        first, probe = (r.body for r in server.received)
    assert first["stream"] is True
    assert probe["stream"] is False
    assert probe["max_tokens"] == 1
    assert "stream_options" not in probe
    assert probe["messages"] == first["messages"]


async def test_a_chat_request_the_server_answers_only_unstreamed_is_sent_unstreamed() -> None:
    turns: list[str | dict[str, Any]] = [
        {"text": "never sent", "cut_after_events": 0},
        "probe",
        {"tool_calls": [{"id": "c1", "name": "Read", "arguments": {"path": "a.txt"}}]},
        "the next answer",
    ]
    with FakeServer(turns) as server:
        first, second = await ask(server, times=2)
        bodies = [r.body for r in server.received]
    assert [b["stream"] for b in bodies] == [True, False, False, False]
    assert [b["max_tokens"] for b in bodies] == [512, 1, 512, 512]
    assert all("stream_options" not in b for b in bodies[1:])
    (call,) = first.message.tool_calls
    assert (call.call_id, call.name, call.arguments) == ("c1", "Read", {"path": "a.txt"})
    assert first.finish == "tool_calls"
    assert first.usage.total_input is not None, "the unstreamed reply's usage is kept"
    # Once the server answered unstreamed what it failed to stream, it is not asked to stream.
    assert second.message.text == "the next answer"


async def test_an_empty_stream_that_asks_fine_otherwise_says_what_usually_causes_it() -> None:
    # The Anthropic decoder reads events only: no unstreamed retry, the diagnosis is the error.
    turns: list[str | dict[str, Any]] = [{"text": "never sent", "cut_after_events": 0}, "fine"]
    with FakeServer(turns) as server:
        with pytest.raises(EmptyStreamError) as caught:
            await ask(server, "anthropic-messages")
        assert server.stats().requests == 2  # not retried: the same request, the same answer
    message = caught.value.message
    assert f"{server.base_url}/v1/messages answered" in message
    assert "empty stream" in message
    assert "fails to stream it" in message
    assert "proxy" in message


class _DropsAfterEmptyStream(socketserver.ThreadingTCPServer):
    """Answers the first request of a connection with an empty 200 stream, then reads the next
    request on that connection and closes it unanswered (as llama-cpp-python's server does
    after a stream that failed); a new connection gets a whole Chat Completions answer."""

    daemon_threads = True
    allow_reuse_address = True
    answer = json.dumps(
        {
            "choices": [{"index": 0, "message": {"content": "hello"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1},
        }
    ).encode()

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _DropHandler)
        self.requests: list[bool] = []
        """Per request: whether it arrived on the connection that had the empty stream."""


class _DropHandler(socketserver.StreamRequestHandler):
    server: _DropsAfterEmptyStream

    def _read_request(self) -> bytes | None:
        length = 0
        while line := self.rfile.readline():
            if line in (b"\r\n", b"\n"):
                return self.rfile.read(length)
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return None

    def handle(self) -> None:
        first = self._read_request()
        if first is None:
            return
        streamed = json.loads(first).get("stream") is True
        self.server.requests.append(streamed)
        if streamed:
            self.wfile.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n0\r\n\r\n"
            )
            self.wfile.flush()
            if self._read_request() is not None:
                self.server.requests.append(True)
            return  # closed unanswered
        while True:
            body = self.server.answer
            self.wfile.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            self.wfile.flush()
            if self._read_request() is None:
                return
            self.server.requests.append(False)


async def test_the_connection_a_failed_stream_leaves_closed_is_not_reused() -> None:
    server = _DropsAfterEmptyStream()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        cfg = ProviderConfig(
            name="local",
            wire="openai-chat",
            base_url=f"http://127.0.0.1:{port}/v1",
            model="fake-model",
            max_retries=0,
        )
        async with httpx2.AsyncClient() as client:
            provider = make_provider(
                cfg, client=client, api_key=None, context_window_override=None, capabilities=CAPS
            )
            reply = await collect(provider.stream(REQUEST))
    finally:
        server.shutdown()
        server.server_close()
    assert reply.message.text == "hello"
    # The stream, the probe lost with the closed connection, the probe again, the request.
    assert server.requests == [True, True, False, False]


async def test_once_a_server_answers_only_unstreamed_the_recorded_bytes_are_those_posted() -> None:
    turns: list[str | dict[str, Any]] = [
        {"text": "never sent", "cut_after_events": 0},
        "probe",
        "the first answer",
        "the next answer",
        "and the last",
    ]
    cfg_base = ProviderConfig(name="local", wire="openai-chat", base_url="", model="fake-model")
    with FakeServer(turns) as server:
        cfg = replace(cfg_base, base_url=server.openai_base_url)
        async with httpx2.AsyncClient() as client:
            provider = make_provider(
                cfg, client=client, api_key=None, context_window_override=None, capabilities=CAPS
            )
            resent: list[Resent] = []
            await collect(
                provider.stream(REQUEST),
                on_event=lambda e: resent.append(e) if isinstance(e, Resent) else None,
            )
            recorded = []
            for text in ("again", "once more"):
                encoded = encode_request(provider, replace(REQUEST, messages=(user_text(text),)))
                recorded.append(digest_bytes(encoded.body))
                reply = await collect(provider.send(encoded))
                assert reply.message.text in ("the next answer", "and the last")
        received = server.received
    # The stream, the probe and the first unstreamed answer, then one POST per later request:
    # each of those is the very bytes the caller encoded (and would record).
    assert len(received) == 5
    # The first request's probe and unstreamed re-send are told to the caller, byte for byte.
    assert [(r.reason, digest_bytes(r.body)) for r in resent] == [
        ("probe", received[1].digest),
        ("unstreamed", received[2].digest),
    ]
    assert [r.digest for r in received[3:]] == recorded
    assert all(r.body["stream"] is False for r in received[3:])
