"""The tool catalog a session offered, recorded so reports count what the model was sent.

When MCP servers are configured, every open of a session (new or resumed: each process starts
its own servers, and their tools may differ) appends one `session.tools` entry:
`{native: [names], mcp: [{server, name, tool, schema_bytes}], failed: [{server, message}],
mcp_digest}` whose body blob holds the offered MCP tool specs as canonical JSON
(`[{name, description, parameters}, …]`, content-addressed, so an unchanged catalog is stored
once). Each failed server also gets a `warning` entry (`MCP_SERVER_UNAVAILABLE`).

`recorded_mcp_specs` reads the latest such entry back: `comal context` and the other commands
that rebuild a recorded session's budget count exactly the MCP schemas its last process
offered, without starting any server. Sessions without MCP servers record nothing here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from comal.config import Config
from comal.errors import LedgerError
from comal.ledger.entry import Entry
from comal.ledger.records import Kind, SessionTools, WarningRecord
from comal.ledger.store import Ledger
from comal.messages import JSONObject, ToolSpec, canonical_json
from comal.tools.base import Tool
from comal.tools.mcp import McpOrigin, McpServerFailure, McpToolset, open_mcp_servers
from comal.tools.secrets import command_env, find_secrets

TOOLS_KIND = Kind.SESSION_TOOLS
MCP_WARNING = "MCP_SERVER_UNAVAILABLE"
MCP_NOTICE = "MCP_SERVER_NOTICE"
"""A started server's stray stdout, or tools it offers that Comal cannot call."""


@asynccontextmanager
async def configured_mcp_tools(config: Config) -> AsyncIterator[McpToolset]:
    """The configured MCP servers, running for the duration of the block.

    Stdio servers run in the workspace; their stderr goes to `<home>/logs/mcp-<server>.log`
    (never to the terminal, where it would garble the TUI or the headless output).
    """
    passthrough = config.sandbox.env_passthrough
    async with open_mcp_servers(
        config.mcp_servers.values(),
        env=command_env(config.env, find_secrets(config.env, config.key_names, passthrough)),
        cwd=config.workspace,
        log_dir=config.home / "logs",
    ) as toolset:
        yield toolset


def _spec_json(spec: ToolSpec) -> JSONObject:
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def record_tool_catalog(
    ledger: Ledger,
    session_id: str,
    native: Sequence[ToolSpec],
    mcp: Sequence[Tool],
    failures: Sequence[McpServerFailure],
) -> Entry:
    """Append the `warning` entries of failed servers, then the `session.tools` entry.

    Args:
        ledger: the open ledger.
        session_id: the session (its lock is held).
        native: the native and session-bound tool specs offered, in order.
        mcp: the MCP tools offered, in order.
        failures: the configured servers that did not start.

    Returns:
        The `session.tools` entry.
    """
    for failure in failures:
        ledger.append_record(session_id, WarningRecord(MCP_WARNING, failure.message))
    body = canonical_json([_spec_json(tool.spec) for tool in mcp]).encode("ascii")
    offered: list[JSONObject] = []
    for tool in mcp:
        origin = tool if isinstance(tool, McpOrigin) else None
        offered.append(
            {
                "server": origin.server if origin else "",
                "name": tool.spec.name,
                "tool": origin.remote_name if origin else tool.spec.name,
                "schema_bytes": len(canonical_json(_spec_json(tool.spec)).encode("ascii")),
            }
        )
    record = SessionTools(
        native=tuple(spec.name for spec in native),
        mcp=tuple(offered),
        failed=tuple({"server": f.server, "message": f.message} for f in failures),
        mcp_digest="sha256:" + hashlib.sha256(body).hexdigest(),
    )
    return ledger.append_record(session_id, record, body=body)


def recorded_mcp_specs(ledger: Ledger, session_id: str) -> tuple[ToolSpec, ...]:
    """The MCP tool specs the session's latest process offered (empty when none recorded).

    Raises:
        LedgerError: the recorded catalog body is missing or malformed.
    """
    entries = ledger.entries(session_id, kinds=(TOOLS_KIND,))
    if not entries:
        return ()
    latest = entries[-1]
    body = ledger.body(latest)
    if body is None:
        raise LedgerError(f"{TOOLS_KIND} entry {latest.id} has no catalog body")
    try:
        raw = json.loads(body)
    except ValueError as exc:
        raise LedgerError(f"{TOOLS_KIND} entry {latest.id}: catalog is not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise LedgerError(f"{TOOLS_KIND} entry {latest.id}: catalog is not a list")
    specs: list[ToolSpec] = []
    for item in raw:
        fields = item if isinstance(item, dict) else {}
        name, description = fields.get("name"), fields.get("description")
        parameters = fields.get("parameters")
        if not (
            isinstance(name, str) and isinstance(description, str) and isinstance(parameters, dict)
        ):
            raise LedgerError(f"{TOOLS_KIND} entry {latest.id}: malformed tool spec {item!r}")
        specs.append(ToolSpec(name, description, parameters))
    return tuple(specs)
