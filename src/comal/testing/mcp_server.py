"""A small real MCP server for tests: `python -m comal.testing.mcp_server [--name NAME]`.

It speaks MCP through the MCP SDK, like any server a user configures: over stdio by default, or
over Streamable HTTP on loopback with `--http [--port N]` (port 0, the default, picks a free
one). In HTTP mode it prints its URL (`http://127.0.0.1:<port>/mcp`) and a newline on stdout
once it accepts connections, writes nothing else there, and serves until its stdin closes or
it gets SIGTERM/SIGINT, so a server started by a test never outlives it. With
`--require-header "Name: value"` every HTTP request must carry that header with exactly that
value; any other request gets 401 with the body and `WWW-Authenticate` header of the MCP SDK's
bearer-token check, and is never seen by the MCP app. `McpHttpServer` runs one as a
subprocess for tests. Tools:
`add` (two integers; text plus structured content), `echo` (text back), `fail` (a result with
`isError`), `big` (`size` characters of numbered lines), `image` (a 1x1 PNG), `data`
(structured content only), `note` (appends a line to a file in the server's working directory:
an effect tests can observe), `sleep` (waits `seconds`, for cancellation tests) and `crash`
(the process exits at once, as a server that dies mid-session).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import uvicorn
from mcp.server import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK = "127.0.0.1"

PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAE"
    "hQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG, base64."""


def big_text(size: int) -> str:
    """Exactly `size` characters of numbered lines (the `big` tool's output)."""
    lines: list[str] = []
    total = 0
    index = 0
    while total < size:
        line = f"line {index:06d} of the big output\n"
        lines.append(line)
        total += len(line)
        index += 1
    return "".join(lines)[:size]


def build_server(name: str) -> MCPServer:
    """The test server with its tools registered."""
    server = MCPServer(name, log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers and return the sum."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def fail(reason: str = "the tool failed on purpose") -> CallToolResult:
        """Return an error result (isError) carrying the reason."""
        return CallToolResult(content=[TextContent(type="text", text=reason)], is_error=True)

    @server.tool()
    def big(size: int = 100_000) -> str:
        """Return `size` characters of numbered lines."""
        return big_text(size)

    @server.tool()
    def image() -> CallToolResult:
        """Return a 1x1 PNG image."""
        png = ImageContent(type="image", data=PNG_1X1, mime_type="image/png")
        return CallToolResult(content=[png])

    @server.tool()
    def data(key: str) -> CallToolResult:
        """Return structured content only (no text block)."""
        return CallToolResult(content=[], structured_content={"key": key, "values": [3, 1, 2]})

    @server.tool()
    def note(path: str, text: str) -> str:
        """Append `text` and a newline to the file `path` (relative to the working directory)."""
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(text + "\n")
        return f"noted in {path}"

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait `seconds`, then say so."""
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def crash() -> str:
        """Exit the server process immediately, without answering."""
        os._exit(7)

    return server


class _AnnouncingServer(uvicorn.Server):
    """A uvicorn server that prints its URL on stdout once it accepts connections."""

    def __init__(self, config: uvicorn.Config, url: str) -> None:
        super().__init__(config)
        self._url = url

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            sys.stdout.write(self._url + "\n")
            sys.stdout.flush()


async def _exit_when_stdin_closes(server: uvicorn.Server) -> None:
    """Ask `server` to stop once stdin reaches end of file (when stdin is a pipe or terminal)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:
        return  # a regular file: nothing to watch, signals still stop the server
    while await reader.read(65_536):
        pass
    server.should_exit = True


def parse_header(text: str) -> tuple[str, str]:
    """`"Name: value"` as (name, value), both stripped.

    Raises:
        ValueError: there is no colon, or the name is empty.
    """
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise ValueError(f"a header is 'Name: value', got {text!r}")
    return name.strip(), value.strip()


class RequireHeader:
    """ASGI middleware: HTTP requests without `name: value` get 401 and never reach `app`.

    The answer is the MCP SDK's own bearer-token refusal (`invalid_token`, a JSON body and a
    `WWW-Authenticate` header), so clients see what a real protected server sends. Lifespan
    and other non-HTTP scopes pass through.
    """

    def __init__(self, app: ASGIApp, name: str, value: str) -> None:
        self.app = app
        self.name = name.lower().encode("latin-1")
        self.value = value.encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.name, self.value) in scope["headers"]:
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": "invalid_token", "error_description": "Authentication required"}
        ).encode()
        challenge = b'Bearer error="invalid_token", error_description="Authentication required"'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def serve_http(
    server: MCPServer, port: int = 0, required_header: tuple[str, str] | None = None
) -> None:
    """Serve `server` over Streamable HTTP on loopback `port` (see the module docstring).

    Args:
        server: the MCP server.
        port: the port (0: any free one).
        required_header: (name, value) every request must carry; None requires nothing.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, port))
    url = f"http://{LOOPBACK}:{sock.getsockname()[1]}/mcp"
    app: ASGIApp = server.streamable_http_app(host=LOOPBACK)
    if required_header is not None:
        app = RequireHeader(app, *required_header)
    config = uvicorn.Config(
        app,
        log_config=None,  # warnings go to stderr through logging's last resort; stdout stays clean
        log_level="warning",
        access_log=False,
        lifespan="on",
        # A client's open event stream must not hold the shutdown for long.
        timeout_graceful_shutdown=1,
    )
    http = _AnnouncingServer(config, url)
    watcher = asyncio.create_task(_exit_when_stdin_closes(http))
    try:
        await http.serve(sockets=[sock])
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        sock.close()


class McpHttpServer:
    """The test server over Streamable HTTP as a subprocess (a context manager).

    Entering starts `python -m comal.testing.mcp_server --http` and waits for its URL; leaving
    closes its stdin (it shuts down) and kills it if it has not exited within 10 s.

    Args:
        cwd: the server's working directory (where `note` writes).
        name: the server name it reports.
        startup_timeout_s: how long to wait for the URL before giving up.
        require_header: `"Name: value"` every request must carry (others get 401); None
            requires nothing.
    """

    def __init__(
        self,
        cwd: Path,
        name: str = "calc",
        startup_timeout_s: float = 30,
        require_header: str | None = None,
    ) -> None:
        self.cwd = cwd
        self.name = name
        self.startup_timeout_s = startup_timeout_s
        self.require_header = require_header
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        """The server's MCP endpoint, `http://127.0.0.1:<port>/mcp`."""
        if self._url is None:
            raise RuntimeError("the MCP HTTP server is not started")
        return self._url

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has ended, else None."""
        return None if self._proc is None else self._proc.poll()

    def _stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-2_000:]

    def start(self) -> McpHttpServer:
        """Start the process and wait until it listens.

        Raises:
            RuntimeError: the server exited or gave no URL within `startup_timeout_s`.
        """
        # Kept open for the process's lifetime (its stderr, read when it fails); stop() closes it.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        argv = [sys.executable, "-m", "comal.testing.mcp_server", "--http", "--name", self.name]
        if self.require_header is not None:
            argv += ["--require-header", self.require_header]
        try:
            proc = subprocess.Popen(
                argv,
                cwd=self.cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
            )
        except OSError:
            self.stop()
            raise
        self._proc = proc
        assert proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout_s
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            ready = remaining > 0 and bool(select.select([proc.stdout], [], [], remaining)[0])
            # os.read, not the buffered pipe: select() must see every byte not yet read.
            chunk = os.read(proc.stdout.fileno(), 4_096) if ready else b""
            if not chunk:
                self.kill()
                message = f"the MCP HTTP server gave no URL (exit status {proc.poll()})"
                stderr = self._stderr_text()
                self.stop()
                raise RuntimeError(f"{message}: {stderr}" if stderr else message)
            line += chunk
        self._url = line.decode().strip()
        return self

    def wait(self, timeout_s: float) -> int:
        """The exit status, once the process has ended (at most `timeout_s` from now).

        Raises:
            RuntimeError: it was never started.
            subprocess.TimeoutExpired: it is still running.
        """
        if self._proc is None:
            raise RuntimeError("the MCP HTTP server is not started")
        return self._proc.wait(timeout=timeout_s)

    def kill(self) -> None:
        """End the process at once (SIGKILL), as a server that goes away mid-session."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def stop(self) -> None:
        """Close the server's stdin and wait for it to exit (killing it after 10 s)."""
        proc = self._proc
        if proc is not None:
            if proc.stdin is not None and not proc.stdin.closed:
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> McpHttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """Run the server over stdio until stdin closes, or over Streamable HTTP with `--http`."""
    parser = argparse.ArgumentParser(prog="python -m comal.testing.mcp_server")
    parser.add_argument("--name", default="calc", help="the server name it reports")
    parser.add_argument(
        "--http", action="store_true", help="serve Streamable HTTP on 127.0.0.1 instead of stdio"
    )
    parser.add_argument("--port", type=int, default=0, help="HTTP port (0: any free one)")
    parser.add_argument(
        "--require-header",
        metavar="'NAME: VALUE'",
        help="with --http: answer 401 to every request without this header and value",
    )
    args = parser.parse_args(argv)
    required = None
    if args.require_header is not None:
        if not args.http:
            parser.error("--require-header needs --http")
        try:
            required = parse_header(args.require_header)
        except ValueError as exc:
            parser.error(str(exc))
    server = build_server(args.name)
    if args.http:
        asyncio.run(serve_http(server, args.port, required))
    else:
        server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
