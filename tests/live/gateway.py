"""A loopback gateway in front of a real server that forwards model calls only.

Like a hosted gateway or a reverse proxy that exposes `/v1/chat/completions` and nothing else,
it hides the server's `/props` and `/v1/models`: Comal cannot discover the window and meets the
server's own CONTEXT_LENGTH refusal instead, which is what the recovery path must handle.
"""

from __future__ import annotations

import http.client
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from comal.testing.loopback import LoopbackHTTPServer, LoopbackService


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackHTTPServer[Gateway]
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:
        """Silent."""

    def do_GET(self) -> None:
        """Nothing but model calls is forwarded."""
        self._refuse()

    def _refuse(self) -> None:
        body = b'{"error":{"message":"not found","type":"not_found"}}'
        self.send_response(404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        """Forward `/v1/chat/completions` as it streams; refuse everything else."""
        if self.path.split("?", 1)[0] != "/v1/chat/completions":
            self._refuse()
            return
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        up = urlsplit(self.server.owner.upstream)
        conn = http.client.HTTPConnection(up.hostname or "127.0.0.1", up.port, timeout=600)
        conn.request("POST", self.path, body=body, headers={"content-type": "application/json"})
        response = conn.getresponse()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() in ("content-type",):
                self.send_header(key, value)
        self.send_header("connection", "close")
        self.end_headers()
        while chunk := response.read1(65_536):
            self.wfile.write(chunk)
            self.wfile.flush()
        conn.close()


class Gateway(LoopbackService):
    """Forward model calls to `upstream` (`http://127.0.0.1:PORT`); a context manager."""

    handler = _Handler

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        super().__init__()

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL clients use."""
        return f"{self.root}/v1"
