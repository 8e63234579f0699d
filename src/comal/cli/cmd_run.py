"""The runner: `comal ["task"]`, `comal -p "task"`, `-r/--resume [ID] [-p [more]]`, `-c`.

Without `-p` on a terminal, the same flags open the TUI instead (imported lazily, so `-p`
never loads Textual), with `TASK` as its first message; off a terminal `comal "task"` runs
headless as `-p` does. `--resume` without an id picks one of this directory's sessions
(`cli/pick.py`). The flags themselves are declared in `cli/flags.py`.

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

from comal.agent.core.events import Notice, TextStreamed, TurnFinished
from comal.agent.core.plugins import load_plugins
from comal.agent.core.session import SessionOptions
from comal.agent.core.tool_catalog import configured_mcp_tools
from comal.agent.core.toolset import standard_tools
from comal.agent.features.custom_commands import command_folders, expand_command, load_commands
from comal.agent.features.state import render_state, session_state
from comal.agent.turns import Outcome, run_headless
from comal.cli.configuring import run_config
from comal.cli.failures import explain
from comal.cli.flags import tool_rules
from comal.cli.pick import choices, pick_headless
from comal.cli.provider_choice import choose_provider
from comal.cli.render import Renderer
from comal.cli.window_check import refuse_overhead
from comal.config import Config, ProviderConfig
from comal.errors import ConfigError, UnknownSessionError
from comal.ledger.records import Kind, SessionMoved
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.providers.client import model_client
from comal.providers.factory import make_provider, resolve_capabilities
from comal.providers.wires import list_models
from comal.session import (
    FINISHED,
    SessionCost,
    cost_json,
    final_answer,
    kept_model,
    open_calls,
    reindex,
    render_cost,
    session_cost,
    session_status,
)


def _load(args: argparse.Namespace, workspace: Path | None = None) -> Config:
    cwd = workspace or (args.cwd.resolve() if args.cwd else None)
    if args.cwd is not None and not args.cwd.is_dir():
        raise ConfigError(f"--cwd {args.cwd} is not a directory")
    config = run_config(cwd=cwd, review=True)
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
    try:
        rules = tool_rules("allow", args.allowed_tools) + tool_rules("deny", args.disallowed_tools)
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(str(exc)) from None
    if rules:
        permissions = config.permissions
        config = dataclasses.replace(
            config, permissions=dataclasses.replace(permissions, rules=permissions.rules + rules)
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
        buffer = getattr(stdin, "buffer", None)
        raw = (
            buffer.read() if buffer is not None else stdin.read().encode("utf-8", "surrogateescape")
        )
    except (OSError, ValueError):
        return None
    return _utf8(raw, "piped stdin").strip() or None


def _utf8(raw: bytes, what: str) -> str:
    """`raw` as text, or a usage error naming where it stops being UTF-8 (never a crash later,
    when the task is recorded)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 4]
        raise ConfigError(
            f"{what} is not UTF-8 text (byte {exc.start}: {bad!r}); pass text, or a file's path"
            " for the agent to read"
        ) from None
    if "\x00" in text:
        raise ConfigError(
            f"{what} holds a NUL byte; pass text, or a file's path for the agent to read"
        )
    return text


def _prompt(args: argparse.Namespace) -> str | None:
    """The task: the `-p` argument, with piped stdin appended (or alone when TASK is omitted)."""
    if args.prompt is None:
        return None
    # An argument that was not UTF-8 arrives with its bytes as lone surrogates.
    _utf8(args.prompt.encode("utf-8", "surrogateescape"), "the task argument")
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
    task: str | None = getattr(args, "task", None)
    interactive = args.prompt is None and _is_tty(sys.stdin) and _is_tty(sys.stdout)
    on_tty = _is_tty(sys.stderr)
    renderer = Renderer(args.output_format, verbose=args.verbose, progress=on_tty, live=on_tty)
    if task is not None and args.prompt is not None:
        renderer.fail(ConfigError("give the task once: `comal TASK` or `comal -p TASK`"))
        return 2
    if task is not None and not interactive:
        args.prompt = task  # off a terminal, `comal "task"` is `comal -p "task"`
        task = None
    resuming = args.resume is not None
    if args.prompt is None and not resuming and not args.continue_latest and not interactive:
        from comal.cli.main import top_parser

        top_parser(task=True).print_help(sys.stderr)
        return 2
    try:
        return await _run(args, renderer, interactive, task)
    except Exception as exc:  # noqa: BLE001 - every failure is reported in the chosen format
        error = explain(exc)
        renderer.fail(error)
        return error.exit_code


async def _picked(ledger: Ledger, config: Config, interactive: bool) -> str | None:
    """`--resume` without an id: the session chosen (None: the picker was left)."""
    offered = choices(ledger, str(config.workspace))
    if not interactive:
        return pick_headless(offered)
    from comal.tui.picker import pick_session

    return await pick_session([(c.session_id, c.label) for c in offered], str(config.workspace))


async def _run(
    args: argparse.Namespace, renderer: Renderer, interactive: bool, task: str | None = None
) -> int:
    config = _load(args)
    with Ledger.open(config.ledger) as ledger:
        renderer.shorten = ledger.short_id
        session_id: str | None = None
        if args.resume == "":
            session_id = await _picked(ledger, config, interactive)
            if session_id is None:
                return 0
        prompt = _expanded(_prompt(args), config)
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
        cfg = await choose_provider(config, args.provider, args.model)
        if session_id is not None and not args.model:
            # A model chosen in the session (`/model`) is kept when it is resumed.
            kept = kept_model(ledger, session_id, cfg.name)
            if kept is not None and kept != cfg.model:
                cfg = dataclasses.replace(cfg, model=kept)
        async with model_client(cfg.base_url) as client:
            provider = await provider_for(config, cfg, client)
            options = SessionOptions(
                max_turns=args.max_turns or config.max_turns,
                reasoning_effort=args.effort or cfg.reasoning_effort,
                max_output_tokens=args.max_output_tokens,
                emit=renderer,
                system_append=args.append_system_prompt or "",
            )

            async def switch_model(model: str) -> Provider:
                return await provider_for(config, dataclasses.replace(cfg, model=model), client)

            async def served_models() -> tuple[str, ...] | None:
                return await list_models(cfg, client, config.api_key(cfg))

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
                        first_message=task,
                        list_models=served_models,
                    )
                if session_id is None:
                    refuse_overhead(config, provider, tools, options)
                async with renderer.ticking():
                    outcome = await run_headless(
                        ledger,
                        config,
                        provider,
                        tools,
                        options,
                        prompt=prompt,
                        session_id=session_id,
                    )
                cost = session_cost(ledger.entries(outcome.session_id), config.prices)
                return _finish(renderer, outcome, cost)  # inside: short ids read the open ledger


def recorded_workspace(ledger: Ledger, session_id: str) -> Path:
    """Where the session works: its recorded cwd, or where a `session.moved` entry moved it."""
    moves = ledger.entries(session_id, kinds=(Kind.SESSION_MOVED,))
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
