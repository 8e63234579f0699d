"""A loopback server that answers with exchanges recorded from a real server, in order.

A recording (`scripts/record-llama-cpp-python.py` writes them) is a JSON document whose
`exchanges` list holds `{"request": {"method", "path", "body"}, "response": {"status",
"headers", "body"}}`. Each request the server receives gets the next recorded response for
its method and path, byte for byte, so a test sees exactly what the real server sent; what it
received is kept in `received` for the test to check. A request with no recorded answer left
gets a 599 whose body says so, which no client mistakes for a real answer.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from comal.messages import JSONObject, JSONValue
from comal.testing.loopback import LoopbackHTTPServer, LoopbackService


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackHTTPServer[ReplayServer]

    def log_message(self, format: str, *args: object) -> None:
        """Silent: tests read `received`."""

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: JSONValue = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = self.path.split("?", 1)[0]
        replay = self.server.owner
        with replay.lock:
            replay.received.append({"method": method, "path": path, "body": body})
            queue = replay.queues.get((method, path))
            response = queue.popleft() if queue else None
        if response is None:
            data = f"no recorded answer left for {method} {path}".encode()
            self.send_response(599)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        text = response.get("body")
        data = text.encode("utf-8") if isinstance(text, str) else b""
        status = response.get("status")
        self.send_response(status if isinstance(status, int) else 500)
        headers = response.get("headers")
        for key, value in headers.items() if isinstance(headers, dict) else ():
            self.send_header(key, str(value))
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        """The next recorded answer for this path."""
        self._answer("POST")

    def do_GET(self) -> None:
        """The next recorded answer for this path."""
        self._answer("GET")


class ReplayServer(LoopbackService):
    """Serve a recording on `127.0.0.1` (use as a context manager)."""

    handler = _Handler

    def __init__(self, recording: Path) -> None:
        doc = json.loads(recording.read_text(encoding="utf-8"))
        self.recording: JSONObject = doc
        self.queues: dict[tuple[str, str], deque[JSONObject]] = defaultdict(deque)
        for exchange in doc["exchanges"]:
            request, response = exchange["request"], exchange["response"]
            self.queues[(request["method"], request["path"])].append(response)
        self.received: list[JSONObject] = []
        self.lock = threading.Lock()
        super().__init__()

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-style base URL."""
        return f"{self.root}/v1"
