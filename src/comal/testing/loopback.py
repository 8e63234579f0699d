"""The frame of a loopback test server: an HTTP server on `127.0.0.1`, served by a daemon thread.

A subclass names its request handler (`handler`, or passes one built in a closure); the handler
reaches the service that owns it as `self.server.owner`. The service is a context manager:
serving on enter, the socket closed and the thread joined on exit.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, Generic, Self, TypeVar

OwnerT = TypeVar("OwnerT")


class LoopbackHTTPServer(ThreadingHTTPServer, Generic[OwnerT]):
    """A daemon thread per request; `owner` is the service whose handler answers."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], owner: OwnerT, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.owner = owner


class LoopbackService:
    """Serve `handler` on `127.0.0.1:port` (0: any free port) while the service is entered."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler] | None = None,
        *,
        port: int = 0,
        poll_interval: float = 0.5,
    ) -> None:
        self._httpd = LoopbackHTTPServer(handler or self.handler, self, port)
        self._poll_interval = poll_interval
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._httpd.server_address[1])

    @property
    def root(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        """Serve in a daemon thread; returns self."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": self._poll_interval},
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            # shutdown() waits for the serving loop: only a started one ever answers it.
            self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
