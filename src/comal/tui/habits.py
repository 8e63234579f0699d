"""The reports of the slash commands people know from other coding agents: `/status`, `/cost`,
`/mcp`, `/permissions`, `/config`, `/memory` and `/resume`'s list.

Each is a pure function of plain values (the configuration, the provider, the open session if
any, ledger rows) returning the text the TUI shows; none changes anything.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence
from pathlib import Path

from comal.agent.core.instructions import load_instructions
from comal.agent.core.session import Session
from comal.config import Config
from comal.ledger.entry import SessionInfo
from comal.ledger.records import Kind, UserMessage
from comal.ledger.store import Ledger
from comal.messages import message_from_json
from comal.providers.base import Provider
from comal.session import render_cost, session_cost, with_status
from comal.tools.base import Tool
from comal.tools.mcp import McpServerFailure, is_mcp_tool

TITLES = {
    "status": "Status",
    "cost": "Cost",
    "mcp": "MCP servers",
    "permissions": "Permissions",
    "config": "Configuration",
    "memory": "Memory (instruction files)",
}
"""The report commands and the titles of their answers."""

RESUME_LIST_LIMIT = 20
"""Sessions `/resume` lists (this directory's, most recently active first)."""


def _rows(rows: Sequence[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def status_report(
    config: Config,
    provider: Provider,
    effort: str | None,
    session: Session | None,
    workspace: Path,
) -> str:
    """`/status`: the session, the model and its window, the workspace, the mode, the ledger."""
    caps = provider.capabilities
    rows: list[tuple[str, str]] = []
    if session is None:
        rows.append(("session", "none yet (one starts with the first message)"))
    else:
        rows.append(("session", f"{session.id} · resume with: comal --resume {session.id}"))
    rows += [
        ("model", f"{provider.name}/{provider.model} ({provider.wire})"),
        ("window", f"{caps.context_window:,} tokens ({caps.window_source})"),
        ("effort", effort or "off"),
        ("workspace", str(workspace)),
        ("mode", config.permissions.mode),
    ]
    if session is not None:
        sandbox = session.runner.context.sandbox
        if sandbox is None:
            confined = "none (full-access)"
        elif sandbox.unavailable is not None:
            confined = f"unavailable: {sandbox.unavailable}"
        else:
            confined = "on"
        rows.append(("sandbox", confined))
        report = session.engine.report()
        rows.append(("context", f"~{report.used_tokens:,} of {report.window_tokens:,} tokens"))
    rows.append(("ledger", str(config.ledger_path)))
    return _rows(rows)


def cost_report(config: Config, ledger: Ledger, session: Session | None) -> str:
    """`/cost`: what the session's model calls cost, with their token counts."""
    if session is None:
        return "cost: no model call yet"
    entries = ledger.entries(session.id)
    cost = session_cost(entries, config.prices)
    used = session.tokens_used()
    return f"{render_cost(cost)}\ntokens used: {used:,} (input and output of every model call)"


def mcp_report(config: Config, tools: Sequence[Tool], failures: Sequence[McpServerFailure]) -> str:
    """`/mcp`: each configured server, how it is reached, and the tools it offers (or why not)."""
    if not config.mcp_servers:
        return "no MCP server configured (`[mcp_servers.NAME]` in .comal/config.toml, or .mcp.json)"
    offered: dict[str, list[str]] = {}
    for tool in tools:
        if is_mcp_tool(tool):
            offered.setdefault(getattr(tool, "server", ""), []).append(tool.spec.name)
    failed = {f.server: f.message for f in failures}
    lines: list[str] = []
    for name in sorted(config.mcp_servers):
        server = config.mcp_servers[name]
        how = server.url or " ".join([server.command or "", *server.args]).strip()
        if name in failed:
            state = f"✗ not available: {failed[name]}"
        else:
            names = offered.get(name, [])
            state = f"✓ {len(names)} tool(s): {', '.join(names) or 'none'}"
        lines.append(f"{name} · {how}\n  {state}")
    return "\n".join(lines)


def permissions_report(config: Config, session: Session | None, workspace: Path) -> str:
    """`/permissions`: the mode, then every rule in force (deny > ask > allow)."""
    perms = config.permissions
    rules = session.runner.permissions.rules if session is not None else perms.rules
    lines = [f"mode: {perms.mode}"]
    if perms.extra_roots:
        lines.append(f"also writable: {', '.join(perms.extra_roots)}")
    if rules:
        lines.append("rules (deny wins over ask, ask over allow):")
        lines += [f"  {r.action:<5} {r.tool}({r.pattern})" for r in rules]
    else:
        lines.append("no rules: the mode decides")
    lines.append(
        f"rules are read from {workspace / '.comal' / 'config.toml'} ([permissions] allow, ask,"
        " deny); 'always' in a permission prompt adds one there"
    )
    return "\n".join(lines)


def config_report(config: Config, provider: Provider, effort: str | None) -> str:
    """`/config`: the files read and the settings in force (never a key)."""
    files = (config.config_dir / "config.toml", config.workspace / ".comal" / "config.toml")
    rows = [(f"file ({'read' if p.is_file() else 'absent'})", str(p)) for p in files]
    rows += [
        ("provider", f"{provider.name} ({provider.wire})"),
        ("model", provider.model),
        ("effort", effort or "off"),
        ("mode", config.permissions.mode),
        ("max_turns", str(config.max_turns)),
        ("threshold", f"{config.context.threshold_ratio:g} of the window"),
        ("providers", ", ".join(sorted(config.providers)) or "none (auto-detected)"),
        ("ledger", str(config.ledger_path)),
    ]
    text = _rows(rows)
    if config.warnings:
        text += "\n" + "\n".join(f"! {w}" for w in config.warnings)
    return text


def memory_report(config: Config, workspace: Path) -> str:
    """`/memory`: the instruction files every model call carries, and where to add one."""
    loaded = load_instructions(workspace, config.config_dir)
    lines = []
    for source in loaded.sources:
        path = Path(source)
        size = path.stat().st_size if path.is_file() else 0
        lines.append(f"{path} ({size:,} bytes)")
    lines += [f"! {problem}" for problem in loaded.problems]
    if not loaded.sources:
        lines.append("no instruction file loaded")
    lines.append(
        f"edit one of these, or write {workspace / 'AGENTS.md'} (/init starts one):"
        " sessions started from now on load it"
    )
    return "\n".join(lines)


def _age(ms: int, now_ms: int) -> str:
    seconds = max(0, (now_ms - ms) // 1000)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def resumable(ledger: Ledger, workspace: Path, current: str | None) -> list[SessionInfo]:
    """This directory's top-level sessions, most recently active first (the current excluded)."""
    here = str(workspace)
    found = [
        s
        for s in ledger.sessions()
        if s.cwd == here and s.parent_id is None and s.id != current and s.source == "comal"
    ]
    found.sort(key=lambda s: s.last_activity_at, reverse=True)
    return [with_status(ledger, s) for s in found[:RESUME_LIST_LIMIT]]


def _first_ask(ledger: Ledger, session: SessionInfo) -> str:
    """The session's title, else the first line of its first message (what people typed)."""
    if session.title:
        return session.title
    for entry in ledger.entries(session.id, kinds=(Kind.MESSAGE_USER,)):
        raw = UserMessage.from_entry(entry).message
        text = "" if raw is None else message_from_json(raw).text.strip()
        if text:
            line = text.splitlines()[0]
            return line if len(line) <= 60 else line[:59] + "…"
    return "(no message)"


def resume_list(ledger: Ledger, sessions: Sequence[SessionInfo]) -> str:
    """`/resume`'s numbered list."""
    if not sessions:
        return "no other session in this directory (`comal sessions` lists them all)"
    now = int(time.time() * 1000)
    lines = [
        f"{n:>2}. {ledger.short_id(s.id)} · {s.status} · {_age(s.last_activity_at, now)}"
        f" · {_first_ask(ledger, s)}"
        for n, s in enumerate(sessions, 1)
    ]
    lines.append("/resume N (or an id) opens it here; this session stays resumable")
    return "\n".join(lines)


def served_list(served: Sequence[str] | None) -> str:
    """The lines `/model` adds: the server's models, or that it lists none."""
    if served is None:
        return "\n(the server lists no models: /model NAME is not checked)"
    return (
        "\nthe server offers: " + ", ".join(served) + "\n/model NAME switches from the next call on"
    )


def unknown_model(name: str, served: Sequence[str]) -> str:
    """Why `/model NAME` was refused: the server does not list it (with the closest it does)."""
    close = difflib.get_close_matches(name, served, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"the server does not list model {name!r} (it offers {', '.join(served)}){hint}"
