"""A small real MCP server for tests: `python -m comal.testing.mcp_server [--name NAME]`.

It speaks MCP over stdio through the MCP SDK, like any server a user configures. Tools:
`add` (two integers; text plus structured content), `echo` (text back), `fail` (a result with
`isError`), `big` (`size` characters of numbered lines), `image` (a 1x1 PNG), `data`
(structured content only), `note` (appends a line to a file in the server's working directory:
an effect tests can observe), `sleep` (waits `seconds`, for cancellation tests) and `crash`
(the process exits at once, as a server that dies mid-session).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from mcp.server import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent

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


def main(argv: list[str] | None = None) -> int:
    """Run the server over stdio until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m comal.testing.mcp_server")
    parser.add_argument("--name", default="calc", help="the server name it reports")
    args = parser.parse_args(argv)
    build_server(args.name).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
