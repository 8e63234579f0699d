"""A loopback gateway in front of a real server that forwards model calls only.

Like a hosted gateway or a reverse proxy that exposes `/v1/chat/completions` and nothing else,
it hides the server's `/props` and `/v1/models`: Comal cannot discover the window and meets the
server's own CONTEXT_LENGTH refusal instead, which is what the recovery path must handle.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit


class _Handler(BaseHTTPRequestHandler):
    server: _Server
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
        up = urlsplit(self.server.upstream)
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    upstream: str


class Gateway:
    """Forward model calls to `upstream` (`http://127.0.0.1:PORT`); a context manager."""

    def __init__(self, upstream: str) -> None:
        self._http = _Server(("127.0.0.1", 0), _Handler)
        self._http.upstream = upstream
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL clients use."""
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> Gateway:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)
