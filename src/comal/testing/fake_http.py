"""The fake server's HTTP side: routes, discovery answers, JSON bodies and SSE streams.

`FakeHandler` answers every request for its `FakeServer` (`self.server.owner`): model calls
get the turn (or error) it decides, rendered in the wire of the endpoint (`fake_wires`), as
JSON or as an SSE stream with the turn's scripted faults (a cut, possibly mid-event; a stall;
a per-event delay); `GET` discovery endpoints report the advertised window in each server
family's shape. Every
answer closes its connection. A stall or delay watches the socket while it waits: a client
that closes the stream meanwhile ends it at once, and the server counts it as abandoned
(`FakeStats.abandoned_streams`), as it does a client whose socket breaks under a write.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from comal.messages import JSONObject, JSONValue, digest_bytes
from comal.testing.fake_checks import requested_output_tokens
from comal.testing.fake_errors import stream_error_event
from comal.testing.fake_script import FakeTurn
from comal.testing.fake_wires import RENDERERS, STREAM_PREFIX, ErrorAnswer, SseItem
from comal.testing.loopback import LoopbackHTTPServer

if TYPE_CHECKING:
    from comal.testing.fake_server import FakeServer

WIRES = (
    ("/chat/completions", "openai-chat"),
    ("/responses", "openai-responses"),
    ("/messages", "anthropic-messages"),
)
"""Model-call path suffixes and the wire each speaks."""


def wire_of(path: str) -> str | None:
    """The wire of a model-call path, or None for any other path."""
    return next((wire for suffix, wire in WIRES if path.endswith(suffix)), None)


class FakeHandler(BaseHTTPRequestHandler):
    """The HTTP side of one `FakeServer`, served on loopback by a daemon thread per request."""

    protocol_version = "HTTP/1.1"
    server: LoopbackHTTPServer[FakeServer]

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging."""

    def _json(self, status: int, obj: JSONValue, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        self.wfile.write(data)

    def _body(self) -> tuple[JSONValue, str]:
        """The request body as JSON (None when it is not JSON) and the digest of its bytes."""
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            value: JSONValue = json.loads(raw or b"null")
        except ValueError:
            value = None
        return value, digest_bytes(raw)

    def do_GET(self) -> None:
        """Stats, received requests and discovery endpoints."""
        fake = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        style = fake.options.discovery_style
        window = fake.advertised_window()
        if path == "/_fake/stats":
            self._json(200, fake.stats().to_json())
        elif path == "/_fake/requests":
            self._json(200, [r.body for r in fake.received])
        elif path in ("/v1/models", "/models") and style in ("all", "vllm", "llamacpp", "ollama"):
            entry: JSONObject = {"id": fake.options.model, "object": "model", "owned_by": "fake"}
            if style in ("all", "vllm"):
                entry["max_model_len"] = window
            if style in ("all", "llamacpp"):
                entry["meta"] = {"n_ctx_train": window * 2, "n_vocab": 151_936}
            self._json(200, {"object": "list", "data": [entry]})
        elif path.startswith("/v1/models/") and style in ("all", "anthropic"):
            model = path.removeprefix("/v1/models/")
            self._json(
                200,
                {
                    "type": "model",
                    "id": model,
                    "display_name": model,
                    "created_at": "2026-01-01T00:00:00Z",
                    "max_input_tokens": window,
                    "max_tokens": fake.options.max_output,
                },
            )
        elif path == "/props" and style in ("all", "llamacpp"):
            self._json(200, {"default_generation_settings": {"n_ctx": window}, "total_slots": 1})
        elif path == "/api/ps" and style in ("all", "ollama"):
            self._json(200, {"models": []})
        else:
            self._json(404, {"error": {"message": f"no route for GET {path}", "type": "not_found"}})

    def do_POST(self) -> None:
        """Model calls and Ollama's `/api/show`."""
        fake = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        body, digest = self._body()
        if path == "/api/show" and fake.options.discovery_style in ("all", "ollama"):
            show: JSONObject = {
                "model_info": {
                    "general.architecture": "qwen2",
                    "qwen2.context_length": fake.advertised_window(),
                },
                "parameters": f"num_ctx {fake.options.ollama_num_ctx}"
                if fake.options.ollama_num_ctx
                else "",
                "capabilities": ["completion", "tools"],
            }
            self._json(200, show)
            return
        if wire_of(path) is None:
            fake.note_unexpected()
            self._json(
                404, {"error": {"message": f"no route for POST {path}", "type": "not_found"}}
            )
            return
        if not isinstance(body, dict):
            self._json(
                400,
                {
                    "error": {
                        "message": "request body is not a JSON object",
                        "type": "invalid_request_error",
                    }
                },
            )
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        wire, answer, ctx = fake.answer(path, body, headers, digest)
        if isinstance(answer, ErrorAnswer):
            self._json(answer.status, answer.body, answer.headers)
            return
        events, whole = RENDERERS[wire]
        error = None
        if answer.error is not None:
            error = fake.error_for_turn(
                wire, answer, ctx.input_tokens, requested_output_tokens(body), ""
            )
        if not body.get("stream"):
            if error is not None:
                self._json(error.status, error.body, error.headers)
            else:
                self._json(200, whole(answer, ctx))
            return
        items = events(answer, ctx)
        if error is not None:
            items = [*items[: STREAM_PREFIX[wire]], stream_error_event(wire, error)]
        try:
            self._stream(items, answer)
        except (BrokenPipeError, ConnectionResetError):
            # A client that went away mid-stream needs no answer, only to be counted.
            fake.note_abandoned()

    def _client_gone(self, seconds: float) -> bool:
        """Wait `seconds` unless the client closes its side first; True when it did.

        The request body was read whole, so the socket turns readable only at end of file (or
        on bytes no client of this server sends: then the rest is waited without watching).
        """
        deadline = time.monotonic() + seconds
        if select.select([self.connection], [], [], seconds)[0]:
            try:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    return True
            except OSError:
                return True
            time.sleep(max(0.0, deadline - time.monotonic()))
        return False

    def _stream(self, items: list[SseItem], turn: FakeTurn) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for n, (event, data) in enumerate(items):
            frame = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
            if turn.cut_after_events is not None and n >= turn.cut_after_events:
                if turn.cut_mid_event:
                    self.wfile.write(frame.encode()[: max(1, len(frame) // 2)])
                self.wfile.flush()
                return
            waits = (
                turn.stall_s if turn.stall_after_events == n else 0.0,
                turn.delay_s if n else 0.0,
            )
            if any(w > 0 and self._client_gone(w) for w in waits):
                raise ConnectionResetError("the client closed the stream")
            self.wfile.write(frame.encode())
            self.wfile.flush()
