"""`comal plugins [--plugin NAME] [--json]`: installed plugins, which are enabled, which load.

Every enabled plugin is loaded here the way a session loads it, so a plugin that fails is
reported with its one-line reason (and the command still lists the others).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass

from comal.agent.core.plugins import enabled_names, installed_plugins, load_plugins
from comal.agent.core.toolset import standard_tools
from comal.cli.cmd_context import emit, emit_json
from comal.config import load_config
from comal.context.measure.tokens import counter_for_model
from comal.context.view.build import tool_schema_text


@dataclass(frozen=True, slots=True)
class PluginRow:
    """One plugin as `comal plugins` shows it."""

    name: str
    entry_point: str | None
    enabled: bool
    loaded: bool
    error: str | None
    tools: list[str]
    schema_tokens: int
    recovery: list[str]


async def _run(args: argparse.Namespace) -> int:
    config = load_config()
    installed = installed_plugins()
    enabled = enabled_names(config, args.plugins)
    loaded = load_plugins(config, args.plugins, taken=[t.spec.name for t in standard_tools()])
    counter = counter_for_model("")
    rows: list[PluginRow] = []
    for name in sorted(set(installed) | set(enabled)):
        plugin = next((p for p in loaded.plugins if p.name == name), None)
        failure = next((f.message for f in loaded.failures if f.name == name), None)
        specs = [t.spec for t in plugin.tools] if plugin else []
        ep = installed.get(name)
        rows.append(
            PluginRow(
                name,
                ep.value if ep else None,
                name in enabled,
                plugin is not None,
                failure,
                [spec.name for spec in specs],
                sum(counter.count(tool_schema_text(spec)) for spec in specs),
                sorted(plugin.reconcilers) if plugin else [],
            )
        )
    if args.json:
        emit_json({"plugins": [asdict(row) for row in rows]})
        return 0
    lines = []
    for row in rows:
        state = "loaded" if row.loaded else ("FAILED" if row.error else "installed")
        lines.append(f"{row.name}  [{state}]  {row.entry_point or 'not installed'}")
        if row.loaded:
            lines.append(f"  tools: {', '.join(row.tools)} (~{row.schema_tokens:,} schema tokens)")
            lines.append(f"  recovery adapters: {', '.join(row.recovery) or 'none'}")
        if row.error:
            lines.append(f"  {row.error}")
    if not rows:
        lines.append("no plugin installed (entry-point group comal.plugins)")
    emit("\n".join(lines) + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal plugins`."""
    parser = subparsers.add_parser("plugins", help="list installed plugins and whether they load")
    parser.add_argument(
        "--plugin",
        dest="plugins",
        action="append",
        default=[],
        metavar="NAME",
        help="also load NAME (as `comal --plugin NAME` would)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(func=_run)
