"""The headless runner: `comal -p "task"`, `--resume UUID [-p [more]]`, `--continue`.

Without `-p` on a terminal, the same flags open the TUI instead (imported lazily, so `-p`
never loads Textual).

Exit codes (documented in the README):
0 the turn ended with an answer (or the session was already finished); 1 unexpected error;
2 usage or configuration error; 3 ledger/session error (unknown, ambiguous, locked, newer
schema); 4 provider error (auth, rate limit after retries, network, invalid request);
5 context error (CONTEXT_OVERHEAD, CONTEXT_PRESSURE_LOOP); 6 --max-turns reached;
130 interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import httpx2

from comal.agent.cost import SessionCost, cost_json, render_cost, session_cost
from comal.agent.custom_commands import command_folders, expand_command, load_commands
from comal.agent.headless import Outcome, run_headless
from comal.agent.session import SessionOptions
from comal.agent.tool_catalog import configured_mcp_tools
from comal.agent.toolset import standard_tools
from comal.cli.provider_choice import choose_provider
from comal.cli.render import Renderer
from comal.config import EFFORTS, Config, ProviderConfig, load_config
from comal.errors import ConfigError
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.providers.factory import make_provider, resolve_capabilities

OUTPUT_FORMATS = ("text", "json", "stream-json")


def register_top_level(parser: argparse.ArgumentParser) -> None:
    """Add the headless flags to the top-level parser and make them the default action."""
    group = parser.add_argument_group("headless run")
    group.add_argument(
        "-p",
        "--print",
        dest="prompt",
        nargs="?",
        const="",
        default=None,
        metavar="TASK",
        help="run TASK without the TUI (TASK from stdin when omitted and stdin is not a TTY)",
    )
    group.add_argument("--resume", metavar="UUID", help="continue a recorded session")
    group.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the latest session of the current directory",
    )
    group.add_argument("--model", help="model name (overrides the provider's configured model)")
    group.add_argument("--provider", help="provider name from config.toml")
    group.add_argument("--context-window", type=int, metavar="N", help="cap the context window")
    group.add_argument("--max-output-tokens", type=int, metavar="N", help="fix the output reserve")
    group.add_argument("--max-turns", type=int, metavar="N", help="model calls allowed per turn")
    group.add_argument(
        "--effort",
        choices=EFFORTS,
        help="reasoning effort (overrides the provider's reasoning_effort)",
    )
    group.add_argument("--cwd", type=Path, help="workspace directory (default: current)")
    group.add_argument(
        "--output-format", choices=OUTPUT_FORMATS, default="text", help="text, json or stream-json"
    )
    group.add_argument(
        "--permission-mode",
        choices=("read-only", "workspace-write", "full-access"),
        help="override permissions.mode",
    )
    parser.set_defaults(func=run_command)


def _load(args: argparse.Namespace) -> Config:
    cwd = args.cwd.resolve() if args.cwd else None
    if cwd is not None and not cwd.is_dir():
        raise ConfigError(f"--cwd {args.cwd} is not a directory")
    config = load_config(cwd=cwd)
    if args.context_window is not None:
        if args.context_window <= 0:
            raise ConfigError("--context-window must be positive")
        current = config.context.context_window
        window = min(args.context_window, current) if current else args.context_window
        config = dataclasses.replace(
            config, context=dataclasses.replace(config.context, context_window=window)
        )
    if args.permission_mode:
        config = dataclasses.replace(
            config,
            permissions=dataclasses.replace(config.permissions, mode=args.permission_mode),
        )
    return config


def _prompt(args: argparse.Namespace, config: Config) -> str | None:
    if args.prompt is None:
        return None
    text: str | None = args.prompt or None
    if args.prompt == "" and not sys.stdin.isatty():
        text = sys.stdin.read().strip() or None
    if text is not None and text.startswith("/"):
        # `comal -p "/fix-issue 123"` runs a custom command, as in the TUI.
        folders = command_folders(config.workspace, config.config_dir, Path.home())
        return expand_command(text, load_commands(folders)) or text
    return text


async def build_provider(
    config: Config, args: argparse.Namespace, client: httpx2.AsyncClient
) -> Provider:
    """The retrying provider for this run, with its window resolved."""
    cfg = await choose_provider(config, args.provider, args.model)
    return await provider_for(config, cfg, client)


async def provider_for(config: Config, cfg: ProviderConfig, client: httpx2.AsyncClient) -> Provider:
    """The retrying provider for one configuration, with its window resolved."""
    api_key = config.api_key(cfg)
    override = config.context.context_window
    caps = await resolve_capabilities(cfg, client, api_key, override)
    return make_provider(
        cfg, client=client, api_key=api_key, context_window_override=override, capabilities=caps
    )


async def run_command(args: argparse.Namespace) -> int:
    """Entry point of the top-level parser when no subcommand is given."""
    interactive = args.prompt is None and sys.stdin.isatty() and sys.stdout.isatty()
    if args.prompt is None and not args.resume and not args.continue_latest and not interactive:
        from comal.cli.main import build_parser

        build_parser().print_help(sys.stderr)
        return 2
    config = _load(args)
    prompt = _prompt(args, config)
    renderer = Renderer(args.output_format)
    with Ledger.open(config.ledger_path) as ledger:
        session_id: str | None = None
        if args.resume:
            session_id = ledger.resolve(args.resume)
        elif args.continue_latest:
            session_id = ledger.latest_session(str(config.workspace))
            if session_id is None:
                raise ConfigError(f"no session recorded in {config.workspace} to continue")
        elif prompt is None and not interactive:
            raise ConfigError("-p needs a task (argument or stdin)")
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(600.0, connect=10.0)) as client:
            cfg = await choose_provider(config, args.provider, args.model)
            provider = await provider_for(config, cfg, client)
            options = SessionOptions(
                max_turns=args.max_turns or config.max_turns,
                reasoning_effort=args.effort or cfg.reasoning_effort,
                max_output_tokens=args.max_output_tokens,
                emit=renderer,
            )

            async def switch_model(model: str) -> Provider:
                return await provider_for(config, dataclasses.replace(cfg, model=model), client)

            async with configured_mcp_tools(config) as mcp:
                tools = [*standard_tools(), *mcp.tools]
                options.mcp_failures = mcp.failures
                if interactive:
                    # Imported only here so that `comal -p` never loads Textual.
                    from comal.tui.launch import run_tui

                    return await run_tui(
                        ledger,
                        config,
                        provider,
                        tools,
                        options,
                        session_id=session_id,
                        switch_model=switch_model,
                    )
                outcome = await run_headless(
                    ledger, config, provider, tools, options, prompt=prompt, session_id=session_id
                )
        cost = session_cost(ledger.entries(outcome.session_id), config.prices)
    return _finish(renderer, outcome, cost)


def _finish(renderer: Renderer, outcome: Outcome, cost: SessionCost) -> int:
    renderer.finish(
        session_id=outcome.session_id,
        status=outcome.status,
        answer=outcome.answer,
        error=outcome.error,
        cost=cost_json(cost),
    )
    if renderer.fmt == "text":
        line = f"session {outcome.session_id} · {outcome.status} · {render_cost(cost)}"
        print(line, file=sys.stderr)
    return 0 if outcome.error is None else outcome.error.exit_code
