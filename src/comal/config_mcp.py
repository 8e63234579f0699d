"""MCP servers in the configuration: `[mcp_servers.NAME]` tables and the workspace's `.mcp.json`
(the `mcpServers` object other agents read), with `${VAR}` references expanded."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from comal.errors import ConfigError


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One MCP server whose tools are offered to the model (`[mcp_servers.NAME]`).

    Exactly one of `command` (a local server spoken to over stdio) and `url` (a Streamable HTTP
    endpoint) is set. `${VAR}` in `args`, `env`, `url` and `headers` is replaced from the
    environment when the configuration is loaded; a variable that is not set is listed in
    `missing_env`, and the server is then reported as unavailable instead of started.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    """Variables set for the server process, over a minimal inherited environment."""
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    """HTTP headers sent to a `url` server (e.g. an authorization token)."""
    transport: str = "http"
    """For a `url` server: `http` (Streamable HTTP) or `sse` (the older HTTP+SSE transport)."""
    enabled: bool = True
    timeout_s: float = 300.0
    """Seconds one tool call may take before it is reported as failed."""
    startup_timeout_s: float = 30.0
    """Seconds to start (or connect to) the server and list its tools."""
    missing_env: tuple[str, ...] = ()
    """`${VAR}` references whose variable is not set."""
    source: str = "config.toml"
    """Where the server was configured: `config.toml` or `.mcp.json`."""


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
"""`${VAR}`, or `${VAR:-default}` (the default when VAR is unset, as `.mcp.json` allows)."""
_MCP_TRANSPORTS = ("http", "sse")
_MCP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")


def _expand(value: object, where: str, env: Mapping[str, str], missing: list[str]) -> str:
    """`value` as a string with `${VAR}` replaced from `env`; unset names go to `missing`."""
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a string, got {value!r}")

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name not in env:
            if default is not None:
                return default
            missing.append(name)
            return ""
        return env[name]

    return _ENV_REF.sub(sub, value)


def _string_table(
    raw: object, where: str, env: Mapping[str, str], missing: list[str]
) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table of strings")
    return tuple(sorted((str(k), _expand(v, f"{where}.{k}", env, missing)) for k, v in raw.items()))


def _positive_seconds(raw: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{where}.{key} must be a positive number of seconds, got {value!r}")
    return float(value)


def mcp_server(
    name: str, raw: object, env: Mapping[str, str], where: str = "", source: str = "config.toml"
) -> McpServerConfig:
    where = where or f"mcp_servers.{name}"
    if not _MCP_NAME.fullmatch(name) or "__" in name:
        raise ConfigError(
            f"{where}: a server name is 1-32 letters, digits, '-' or '_' (no '__'), because it"
            " becomes part of tool names (mcp__<server>__<tool>)"
        )
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table")
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{where} needs exactly one of command (stdio) or url (HTTP)")
    missing: list[str] = []
    args = raw.get("args", [])
    if not isinstance(args, list):
        raise ConfigError(f"{where}.args must be a list of strings")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}.enabled must be true or false")
    transport = raw.get("transport", "http")
    if transport not in _MCP_TRANSPORTS:
        raise ConfigError(f"{where}.transport must be http or sse, got {transport!r}")
    server = McpServerConfig(
        name=name,
        command=None if command is None else _expand(command, f"{where}.command", env, missing),
        args=tuple(_expand(a, f"{where}.args", env, missing) for a in args),
        env=_string_table(raw.get("env", {}), f"{where}.env", env, missing),
        url=None if url is None else _expand(url, f"{where}.url", env, missing),
        headers=_string_table(raw.get("headers", {}), f"{where}.headers", env, missing),
        transport=str(transport),
        enabled=enabled,
        timeout_s=_positive_seconds(raw, "timeout_s", where, 300.0),
        startup_timeout_s=_positive_seconds(raw, "startup_timeout_s", where, 30.0),
        missing_env=tuple(dict.fromkeys(missing)),
        source=source,
    )
    if server.command == "" or server.url == "":
        raise ConfigError(f"{where}: command or url must not be empty")
    return server


def mcp_servers(raw: object, env: Mapping[str, str]) -> dict[str, McpServerConfig]:
    if not isinstance(raw, Mapping):
        raise ConfigError("mcp_servers must be a table of [mcp_servers.NAME] tables")
    return {name: mcp_server(name, raw[name], env) for name in sorted(raw)}


_MCP_JSON_KEYS = {"stdio": ("command", "args", "env"), "http": ("url", "headers")}


def mcp_json_servers(workspace: Path, env: Mapping[str, str]) -> dict[str, McpServerConfig]:
    """The servers of `<workspace>/.mcp.json`: `{"mcpServers": {NAME: {...}}}`.

    An entry is `{"command", "args", "env"}` (stdio; `"type": "stdio"` optional) or
    `{"type": "http" | "sse", "url", "headers"}`. Other keys (another agent's own) are ignored.
    """
    path = workspace / ".mcp.json"
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid JSON: {exc}") from exc
    servers = raw.get("mcpServers", {}) if isinstance(raw, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: mcpServers must be an object of servers by name")
    out: dict[str, McpServerConfig] = {}
    for name in sorted(servers):
        entry, where = servers[name], f"{path.name}: mcpServers.{name}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be an object")
        kind = entry.get("type", "stdio" if "command" in entry else "http")
        if kind not in ("stdio", "http", "sse"):
            raise ConfigError(f"{where}.type must be stdio, http or sse, got {kind!r}")
        keys = _MCP_JSON_KEYS["stdio" if kind == "stdio" else "http"]
        table: dict[str, object] = {k: entry[k] for k in keys if k in entry}
        if kind != "stdio":
            table["transport"] = kind
        out[name] = mcp_server(name, table, env, where=where, source=".mcp.json")
    return out
