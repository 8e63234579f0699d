"""MCP servers as tool providers: the session's server set and how their tools are named.

`open_mcp_servers(servers, ...)` is an async context manager: it starts (stdio) or connects to
(Streamable HTTP) every enabled server at once, lists its tools, and yields an `McpToolset`
whose tools the agent offers the model like its native ones. On exit every server is shut down
(a stdio server runs in its own process group: stdin is closed, then the group is terminated).

Invariants:
- A server that cannot start, connect or list its tools never stops the session: it becomes an
  `McpServerFailure` (a clear message, with the tail of its stderr when there is one) and the
  others go on without it. With no enabled server, the MCP SDK is not even imported.
- Tool names are `mcp__<server>__<tool>`, restricted to what every wire accepts
  (`[A-Za-z0-9_-]`, at most 64 characters) and unique; a name that had to change keeps a short
  digest of the original so two tools never collide. The call goes out under the server's
  own name for the tool.
- The catalog is deterministic: servers in name order, each server's tools sorted by name, so
  the same servers offer byte-identical schemas (provider prompt caching keeps hitting).
- MCP tools are never read-only and have no recovery adapter: a call a crash interrupted stays
  `uncertain` and is never re-run on its own. Permission rules match the exposed name, so
  `deny = [{tool = "mcp__github__*"}]` refuses every tool of that server.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from comal.config import McpServerConfig
from comal.messages import JSONObject, JSONValue
from comal.tools.base import Tool

__all__ = [
    "MCP_PREFIX",
    "McpNotice",
    "McpOrigin",
    "McpServerFailure",
    "McpToolset",
    "input_schema",
    "is_mcp_tool",
    "mcp_tool_name",
    "open_mcp_servers",
    "tool_description",
]

MCP_PREFIX = "mcp__"
MAX_TOOL_NAME = 64
"""The longest tool name OpenAI and Anthropic both accept."""
MAX_DESCRIPTION_CHARS = 2_048
"""Longer server descriptions are cut: they cost budget on every request."""

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class McpServerFailure:
    """A configured server whose tools are not offered in this session, and why."""

    server: str
    message: str


@dataclass(frozen=True, slots=True)
class McpNotice:
    """Something about a started server worth telling once (stray stdout, tools not offered)."""

    server: str
    message: str


@dataclass(frozen=True, slots=True)
class McpToolset:
    """What the configured servers offer: their tools, the servers that failed, and notices."""

    tools: tuple[Tool, ...] = ()
    failures: tuple[McpServerFailure, ...] = ()
    notices: tuple[McpNotice, ...] = ()


@runtime_checkable
class McpOrigin(Protocol):
    """Where an MCP tool comes from (implemented by every MCP tool)."""

    server: str
    """The configured server name."""
    remote_name: str
    """The tool's name on that server (what `tools/call` sends)."""


def is_mcp_tool(tool: object) -> bool:
    """True for a tool provided by an MCP server."""
    return isinstance(tool, McpOrigin)


def _short_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def mcp_tool_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """The name the model sees for `tool` of `server`: `mcp__<server>__<tool>`.

    Characters outside `[A-Za-z0-9_-]` become `_`. When that changed the name, the name is too
    long, or it is already `taken`, the tool part is cut and followed by `_` and 8 hex digits
    of the original tool name's SHA-256, so the result stays unique and stable.

    Args:
        server: the configured server name (already restricted by the configuration).
        tool: the tool's name on the server.
        taken: names already given in this catalog.
    """
    head = f"{MCP_PREFIX}{server}__"
    clean = _INVALID_NAME_CHARS.sub("_", tool) or "tool"
    name = head + clean
    if clean == tool and len(name) <= MAX_TOOL_NAME and name not in set(taken):
        return name
    suffix = "_" + _short_digest(tool)
    room = max(MAX_TOOL_NAME - len(head) - len(suffix), 1)
    return head + clean[:room] + suffix


def tool_description(server: str, tool: str, description: str | None, title: str | None) -> str:
    """The description offered to the model: the server's, cut at `MAX_DESCRIPTION_CHARS`.

    A tool without a description is described by its title, or by where it comes from.
    """
    text = (description or "").strip() or (title or "").strip()
    if not text:
        return f"Tool {tool!r} of the MCP server {server!r}."
    if len(text) <= MAX_DESCRIPTION_CHARS:
        return text
    marker = " […description cut]"
    cut = text[: MAX_DESCRIPTION_CHARS - len(marker)]
    space = cut.rfind(" ")
    if space > MAX_DESCRIPTION_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip() + marker


def input_schema(raw: Mapping[str, JSONValue] | None) -> JSONObject:
    """The server's input schema as a JSON object schema every wire accepts.

    The schema is kept as the server gave it; only a missing top-level `type` becomes
    `"object"` and a missing `properties` an empty object, which OpenAI requires.
    """
    schema: JSONObject = dict(raw or {})
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


@asynccontextmanager
async def open_mcp_servers(
    servers: Iterable[McpServerConfig],
    *,
    env: Mapping[str, str],
    cwd: Path,
    log_dir: Path | None = None,
) -> AsyncIterator[McpToolset]:
    """Start or connect every enabled server, yield their tools, shut them down on exit.

    Args:
        servers: the configured servers (`Config.mcp_servers.values()`); disabled ones are
            skipped.
        env: the environment stdio servers inherit a minimal part of (`Config.env`).
        cwd: the working directory of stdio servers (the workspace).
        log_dir: where each stdio server's stderr goes (`mcp-<server>.log`); None discards it.

    Yields:
        The tools of every server that started, and a failure for every one that did not.
    """
    enabled = sorted((s for s in servers if s.enabled), key=lambda s: s.name)
    if not enabled:
        yield McpToolset()
        return
    # Imported here: the SDK takes over a second to import, and most sessions have no server.
    from comal.tools._mcp_client import McpConnections

    connections = McpConnections(enabled, env=env, cwd=cwd, log_dir=log_dir)
    try:
        yield await connections.start()
    finally:
        await connections.aclose()
