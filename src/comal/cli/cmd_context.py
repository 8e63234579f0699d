"""`comal context UUID [--json]`: the budget of a recorded session's next request.

Also holds `recorded_engine`, shared by `compact`, `checkpoints` and `evidence`: a context
engine for any recorded session, with the window and model from its `session.started` entry
(the smaller of that window and an explicit `--context-window` / `COMAL_CONTEXT_WINDOW`), the
system prompt, the workspace's custom instructions, the standard tool schemas and the MCP tool
schemas recorded in its latest `session.tools` entry and the plugin tool schemas recorded in its
latest `session.plugins` entry. A resumed session is reported with the window and model of its
latest `session.resumed` entry.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from comal.agent.core.instructions import load_instructions
from comal.agent.core.plugins import recorded_plugin_owners, recorded_plugin_specs
from comal.agent.core.prompt import SYSTEM_PROMPT
from comal.agent.core.tool_catalog import recorded_mcp_specs
from comal.agent.core.toolset import session_tools, standard_tools
from comal.cli.configuring import read_only_config
from comal.cli.timeline import timeline_of, write_timeline
from comal.config import DEFAULT_WINDOW_TOKENS, Config
from comal.context.engine import ContextEngine, EngineSettings, FixedParts
from comal.ledger.records import ProviderRequest, SessionResumed, SessionStarted
from comal.ledger.records import fields as f
from comal.ledger.store import Ledger
from comal.messages import JSONObject
from comal.providers import catalog
from comal.session.cost import cost_json, render_cost, session_cost


def emit(text: str) -> None:
    """Write data to stdout as UTF-8 (lone surrogates escaped)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
    sys.stdout.buffer.flush()


def emit_json(value: Any) -> None:
    """Write one JSON document to stdout."""
    emit(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def _window(window: JSONObject, model: str) -> tuple[int, str]:
    """The window a session ran with; an imported one (none recorded) gets its model's."""
    tokens = f.int_or_none(window, "tokens")
    if tokens is not None and tokens > 0:
        return tokens, f.text(window, "source", "recorded")
    entry = catalog.lookup(model) if model else None
    if entry is not None:
        return entry.window, "catalog"
    return DEFAULT_WINDOW_TOKENS, "fallback"


def _vision(vision: bool | None, model: str) -> bool:
    """Whether the session's model took images (recorded; else its catalog entry's word)."""
    if vision is not None:
        return vision
    entry = catalog.lookup(model) if model else None
    return entry is not None and entry.vision


def _last_reserve(ledger: Ledger, session_id: str) -> int | None:
    """The output reserve the session's latest request was sent with, if any.

    A run may have fixed its reserve with `--max-output-tokens`; the report of the recorded
    session should show the budget that run really used, not a default.
    """
    requests = ledger.entries(session_id, kinds=("provider.request",))
    if not requests:
        return None
    value = ProviderRequest.from_entry(requests[-1]).output_reserve
    return value if value is not None and value > 0 else None


def recorded_engine(ledger: Ledger, session_id: str, config: Config) -> ContextEngine:
    """A context engine for a recorded session (no provider needed)."""
    info = ledger.session(session_id)
    # The latest of the start and the resumes: a session resumed on another model is
    # reported against the window of the model it now runs on.
    started = ledger.entries(session_id, kinds=("session.started", "session.resumed"))
    latest = started[-1] if started else None
    ran: SessionStarted | SessionResumed | None = None
    if latest is not None:
        ran = (SessionStarted if latest.kind == "session.started" else SessionResumed).from_entry(
            latest
        )
    model_name = (ran.model if ran is not None else "") or info.model
    window, source = _window({} if ran is None else ran.window, model_name)
    vision = ran.vision if isinstance(ran, SessionStarted) else None
    explicit = config.context.context_window
    if explicit is not None and explicit < window:
        window, source = explicit, "explicit"
    workspace = Path(info.cwd) if info.cwd else config.workspace
    instructions = load_instructions(workspace, config.config_dir).text
    # The same catalog a live session offers, so the report counts what the model was sent.
    offered = [*standard_tools(), *session_tools(ledger, session_id, config.checks)]
    tools = tuple(tool.spec for tool in offered)
    settings = EngineSettings(
        window_tokens=window,
        window_source=source,
        threshold_ratio=config.context.threshold_ratio,
        large_output_threshold_bytes=config.context.large_output_threshold_bytes,
        output_reserve_tokens=config.context.output_reserve_tokens
        or _last_reserve(ledger, session_id),
        margin_tokens=config.context.margin_tokens,
        media_budget_tokens=config.context.media_budget_tokens,
        vision=_vision(vision, model_name),
        soft_limit=config.context.soft_limit,
        cache_ttl_s=config.context.cache_ttl_s,
    )
    # MCP schemas as the session's last process recorded them (no server is started here).
    fixed = FixedParts(
        SYSTEM_PROMPT,
        instructions,
        tools,
        recorded_mcp_specs(ledger, session_id),
        recorded_plugin_specs(ledger, session_id),
        recorded_plugin_owners(ledger, session_id),
    )
    return ContextEngine(ledger, session_id, settings, fixed, model=model_name)


async def _run(args: argparse.Namespace) -> int:
    config = read_only_config()
    with Ledger.open(config.ledger) as ledger:
        session_id = ledger.resolve(args.session)
        engine = recorded_engine(ledger, session_id, config)
        report = engine.report()
        entries = ledger.entries(session_id)
        cost = session_cost(entries, config.prices)
        if args.timeline is not None:
            picture = timeline_of(entries, engine.window()[0], report.threshold_tokens)
            write_timeline(picture, args.timeline, f"session {session_id} · {engine.model}")
            print(f"wrote {args.timeline} ({len(picture.calls)} calls)", file=sys.stderr)
    if args.json:
        emit_json({**report.to_json(), "cost": cost_json(cost)})
    else:
        emit(report.render() + "\n" + render_cost(cost) + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal context`."""
    parser = subparsers.add_parser(
        "context", help="show where a session's context window goes (budget rows)"
    )
    parser.add_argument("session", metavar="ID", help="short id, session id, or a unique prefix")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument(
        "--timeline",
        type=Path,
        metavar="OUT.png|OUT.svg",
        help="also draw the context timeline: tokens per call by component, window, events",
    )
    parser.set_defaults(func=_run)
