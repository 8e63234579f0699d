"""The headless runner: `comal -p "task"`, `--resume UUID [-p [more]]`, `--continue`.

Without `-p` on a terminal, the same flags open the TUI instead (imported lazily, so `-p`
never loads Textual).

Exit codes (documented in the README):
0 the turn ended with an answer (or the session was already finished); 1 unexpected error;
2 usage or configuration error; 3 ledger/session error (unknown, ambiguous, locked, newer
schema); 4 provider error (auth, rate limit after retries, network, invalid request);
5 context error (CONTEXT_OVERHEAD, CONTEXT_PRESSURE_LOOP); 6 --max-turns reached;
7 the model refused (status `refused`); 129 SIGHUP; 130 interrupted; 143 SIGTERM
(see `cli/_signals.py`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import httpx2

from comal.agent.cost import SessionCost, cost_json, render_cost, session_cost
from comal.agent.custom_commands import command_folders, expand_command, load_commands
from comal.agent.events import Notice, TextStreamed, TurnFinished
from comal.agent.plugins import load_plugins
from comal.agent.session import SessionOptions
from comal.agent.session_facts import final_answer, open_calls, render_state, session_state
from comal.agent.session_status import FINISHED, reindex, session_status
from comal.agent.tool_catalog import configured_mcp_tools
from comal.agent.toolset import standard_tools
from comal.agent.turns import Outcome, run_headless
from comal.cli.configuring import run_config
from comal.cli.failures import explain
from comal.cli.provider_choice import choose_provider
from comal.cli.render import Renderer
from comal.cli.window_check import refuse_overhead
from comal.config import EFFORTS, Config, ProviderConfig
from comal.errors import ConfigError, UnknownSessionError
from comal.ledger.records import SessionMoved
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
        help=(
            "run TASK without the TUI and print the final answer; piped stdin is appended to"
            " TASK (or is the task when TASK is omitted)"
        ),
    )
    group.add_argument(
        "--resume", metavar="ID", help="continue a recorded session (short id, id or prefix)"
    )
    group.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the latest session of the current directory",
    )
    group.add_argument("--model", help="model name (overrides the provider's configured model)")
    group.add_argument("--provider", help="provider name from config.toml")
    group.add_argument("--context-window", type=int, metavar="N", help="cap the context window")
    group.add_argument("--max-output-tokens", type=int, metavar="N", help="cap the output reserve")
    group.add_argument(
        "--max-turns", type=_at_least_one, metavar="N", help="model calls allowed per turn (≥ 1)"
    )
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
        "--plugin",
        dest="plugins",
        action="append",
        default=[],
        metavar="NAME",
        help="load plugin NAME (repeatable; added to [plugins] enabled)",
    )
    group.add_argument(
        "--verbose",
        action="store_true",
        help="text mode: show every progress line and the model's commentary on stderr",
    )
    group.add_argument(
        "--permission-mode",
        choices=("read-only", "workspace-write", "full-access"),
        help="override permissions.mode",
    )
    parser.set_defaults(func=run_command)


def _at_least_one(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _load(args: argparse.Namespace, workspace: Path | None = None) -> Config:
    cwd = workspace or (args.cwd.resolve() if args.cwd else None)
    if args.cwd is not None and not args.cwd.is_dir():
        raise ConfigError(f"--cwd {args.cwd} is not a directory")
    config = run_config(cwd=cwd)
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


def _piped_stdin() -> str | None:
    """What was piped to stdin, or None when stdin is a terminal or closed (`comal -p <&-`)."""
    stdin = sys.stdin
    if stdin is None or stdin.closed:
        return None
    try:
        if stdin.isatty():
            return None
        text = stdin.read()
    except (OSError, ValueError):
        return None
    return text.strip() or None


def _prompt(args: argparse.Namespace) -> str | None:
    """The task: the `-p` argument, with piped stdin appended (or alone when TASK is omitted)."""
    if args.prompt is None:
        return None
    piped = _piped_stdin()
    if not args.prompt:
        return piped
    return args.prompt if piped is None else f"{args.prompt}\n\n{piped}"


def _expanded(prompt: str | None, config: Config) -> str | None:
    """`comal -p "/fix-issue 123"` runs a custom command, as in the TUI."""
    if prompt is None or not prompt.startswith("/"):
        return prompt
    folders = command_folders(config.workspace, config.config_dir, Path.home())
    return expand_command(prompt, load_commands(folders)) or prompt


def _is_tty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


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
    interactive = args.prompt is None and _is_tty(sys.stdin) and _is_tty(sys.stdout)
    if args.prompt is None and not args.resume and not args.continue_latest and not interactive:
        from comal.cli.main import build_parser

        build_parser().print_help(sys.stderr)
        return 2
    renderer = Renderer(args.output_format, verbose=args.verbose, progress=_is_tty(sys.stderr))
    try:
        return await _run(args, renderer, interactive)
    except Exception as exc:  # noqa: BLE001 - every failure is reported in the chosen format
        error = explain(exc)
        renderer.fail(error)
        return error.exit_code


async def _run(args: argparse.Namespace, renderer: Renderer, interactive: bool) -> int:
    config = _load(args)
    prompt = _expanded(_prompt(args), config)
    with Ledger.open(config.ledger) as ledger:
        renderer.shorten = ledger.short_id
        session_id: str | None = None
        if args.resume:
            session_id = ledger.resolve(args.resume)
        elif args.continue_latest:
            session_id = ledger.latest_session(str(config.workspace))
            if session_id is None:
                raise UnknownSessionError(
                    f"no session recorded in {config.workspace} to continue"
                    " (`comal sessions` lists them all)"
                )
        elif prompt is None and not interactive:
            raise ConfigError("-p needs a task (argument or stdin)")
        if session_id is not None:
            workspace = _place(args, ledger, session_id)
            if workspace != config.workspace:
                config = _load(args, workspace)  # the session's workspace config applies
            finished = session_status(ledger, session_id) == FINISHED
            if prompt is None and not interactive and finished and _settled(ledger, session_id):
                return _show_finished(renderer, ledger, session_id)
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
                options.plugins = load_plugins(
                    config, args.plugins, taken=[tool.spec.name for tool in tools]
                )
                options.mcp_notices = mcp.notices
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
                if session_id is None:
                    refuse_overhead(config, provider, tools, options)
                outcome = await run_headless(
                    ledger, config, provider, tools, options, prompt=prompt, session_id=session_id
                )
                cost = session_cost(ledger.entries(outcome.session_id), config.prices)
                return _finish(renderer, outcome, cost)  # inside: short ids read the open ledger


def recorded_workspace(ledger: Ledger, session_id: str) -> Path:
    """Where the session works: its recorded cwd, or where a `session.moved` entry moved it."""
    moves = ledger.entries(session_id, kinds=("session.moved",))
    target = SessionMoved.from_entry(moves[-1]).to if moves else None
    where: str = target if target is not None else ledger.session(session_id).cwd
    return Path(where)


def _place(args: argparse.Namespace, ledger: Ledger, session_id: str) -> Path:
    """The workspace a resumed session runs its tools in.

    Its recorded one; `--cwd` moves it explicitly (recorded as `session.moved`, under the
    session's lock); a recorded directory that is gone is refused with the way out.
    """
    recorded = recorded_workspace(ledger, session_id)
    if args.cwd is None:
        if not recorded.is_dir():
            raise ConfigError(
                f"session {ledger.short_id(session_id)} works in {recorded}, which no longer"
                " exists; resume it with --cwd DIR to move it there (the move is recorded)"
            )
        return recorded
    target: Path = args.cwd.resolve()
    if target != recorded:
        ledger.acquire_lock(session_id)
        ledger.append_record(session_id, SessionMoved(str(recorded), str(target)))
    return target


def _settled(ledger: Ledger, session_id: str) -> bool:
    """No started call is left without a result (else the session opens, and recovery settles
    it, before its answer is shown)."""
    return all(call.started is None for call in open_calls(ledger.entries(session_id)))


def _show_finished(renderer: Renderer, ledger: Ledger, session_id: str) -> int:
    """A finished session resumed with no new message: its answer and state, no provider."""
    reindex(ledger, session_id)
    answer = final_answer(ledger.entries(session_id)) or ""
    renderer.session_id = session_id
    renderer(TextStreamed(answer + "\n"))
    renderer(Notice("STATE", render_state(session_state(ledger, session_id))))
    renderer(TurnFinished(session_id, answer, 0, "finished"))
    renderer.finish(session_id=session_id, status="finished", answer=answer, error=None)
    return 0


def _finish(renderer: Renderer, outcome: Outcome, cost: SessionCost) -> int:
    renderer.finish(
        session_id=outcome.session_id,
        status=outcome.status,
        answer=outcome.answer,
        error=outcome.error,
        cost=cost_json(cost),
        cost_line=render_cost(cost),
    )
    return 0 if outcome.error is None else outcome.error.exit_code
