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
from dataclasses import replace
from pathlib import Path
from typing import Any

from comal.agent.core.instructions import load_instructions
from comal.agent.core.plugins import recorded_plugin_owners, recorded_plugin_specs
from comal.agent.core.prompt import SYSTEM_PROMPT
from comal.agent.core.tool_catalog import recorded_mcp_specs
from comal.agent.core.toolset import session_tools, standard_tools
from comal.cli.configuring import read_only_config
from comal.cli.timeline import timeline_of, write_timeline
from comal.config import Config
from comal.context.engine import ContextEngine, FixedParts
from comal.context.factory import ModelWindow, engine_for
from comal.ledger.store import Ledger
from comal.session import cost_json, ran_on, render_cost, session_cost


def emit(text: str) -> None:
    """Write data to stdout as UTF-8 (lone surrogates escaped)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
    sys.stdout.buffer.flush()


def emit_json(value: Any) -> None:
    """Write one JSON document to stdout."""
    emit(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def recorded_engine(ledger: Ledger, session_id: str, config: Config) -> ContextEngine:
    """A context engine for a recorded session (no provider needed)."""
    ran = ran_on(ledger, session_id)
    window = ModelWindow(ran.window_tokens, ran.window_source, vision=ran.vision)
    explicit = config.context.context_window
    if explicit is not None and explicit < window.tokens:
        window = replace(window, tokens=explicit, source="explicit")
    info = ledger.session(session_id)
    workspace = Path(info.cwd) if info.cwd else config.workspace
    instructions = load_instructions(workspace, config.config_dir).text
    # The same catalog a live session offers, so the report counts what the model was sent.
    offered = [*standard_tools(), *session_tools(ledger, session_id, config.checks)]
    tools = tuple(tool.spec for tool in offered)
    # MCP schemas as the session's last process recorded them (no server is started here).
    fixed = FixedParts(
        SYSTEM_PROMPT,
        instructions,
        tools,
        recorded_mcp_specs(ledger, session_id),
        recorded_plugin_specs(ledger, session_id),
        recorded_plugin_owners(ledger, session_id),
    )
    return engine_for(
        ledger,
        session_id,
        window,
        fixed,
        model=ran.model,
        context=config.context,
        recorded_reserve=ran.output_reserve,
    )


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
