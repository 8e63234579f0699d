"""Command-line entry point: `comal …` and `python -m comal`.

`comal [TASK]` opens the TUI (with TASK as its first message), `comal -p TASK` runs headless,
`comal COMMAND …` runs a subcommand: a first positional that names no command is the task.

Each subcommand lives in its own `cli/cmd_*.py` module exposing `register(subparsers)`; the
module sets `func` (an `async def (args) -> int`) on its parser. Only the module of the command
being run is imported, so `comal --help`, `--version` and the read-only commands start without
the agent, asyncio or the HTTP client (`tests/unit/cli/test_startup_imports.py`); `COMMANDS`
holds what `--help` lists. Data goes to stdout, progress and errors to stderr; an unknown flag
is answered with the closest known one.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NoReturn, cast

from comal import __version__
from comal.cli.flags import register_top_level

COMMANDS: dict[str, tuple[str, str]] = {
    "sessions": ("comal.cli.cmd_sessions", "list this directory's sessions, latest activity first"),
    "show": ("comal.cli.cmd_sessions", "print a session's transcript"),
    "verify": ("comal.cli.cmd_sessions", "re-hash the ledger's entries and blobs"),
    "demo": (
        "comal.cli.cmd_demo",
        "offline scripted demo on a sample project (no model or network needed)",
    ),
    "import": ("comal.cli.cmd_import", "import recorded sessions of other agents"),
    "bench": ("comal.cli.cmd_bench", "benchmarks (replay of recorded sessions)"),
    "models": (
        "comal.cli.cmd_models",
        "configured providers and models with their context windows",
    ),
    "doctor": (
        "comal.cli.cmd_models",
        "check each provider (its models endpoint answers, key set, --probe) and the ledger",
    ),
    "context": (
        "comal.cli.cmd_context",
        "show where a session's context window goes (budget rows)",
    ),
    "compact": (
        "comal.cli.cmd_compact",
        "derive a checkpoint now (deterministic, no model call; refused when it would not make"
        " the view smaller)",
    ),
    "checkpoints": ("comal.cli.cmd_checkpoints", "list a session's checkpoints or show one"),
    "evidence": ("comal.cli.cmd_evidence", "read recorded evidence exactly (no re-run)"),
    "state": (
        "comal.cli.cmd_state",
        "a session's status, lock, board, pending/uncertain calls and usage",
    ),
    "plugins": ("comal.cli.cmd_plugins", "list installed plugins and whether they load"),
    "rewind": (
        "comal.cli.cmd_rewind",
        "restore a session's files and conversation to an earlier point",
    ),
    "fork": ("comal.cli.cmd_fork", "start a new session from a session's history up to an entry"),
    "export": ("comal.cli.cmd_export", "a session's transcript as md, html or json"),
    "trust": ("comal.cli.cmd_trust", "review the project's hooks and MCP servers and trust them"),
    "ledger": ("comal.cli.cmd_ledger", "move the ledger to another engine"),
}
"""Each subcommand: the module that registers it, and its line in `comal --help`."""

RUNNER_MODULE = "comal.cli.cmd_run"
"""Module that runs the agent (headless or the TUI) when no subcommand is given."""

USAGE = "comal [options] [TASK]\n       comal COMMAND [options] …"


class Parser(argparse.ArgumentParser):
    """argparse with the closest known flag suggested, and JSON errors in JSON modes."""

    json_errors = False
    """Set by `main` when the command line asks for JSON output (`--json`, `--output-format`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviations: `sessions --all` is not the top level's `--allowedTools`.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print usage and one line (plus a JSON error object in JSON modes); exit 2."""
        message = _suggest(self, message)
        if Parser.json_errors:
            body = {"error": {"code": "USAGE", "message": message}}
            print(json.dumps(body, ensure_ascii=False), flush=True)
        self.print_usage(sys.stderr)
        self.exit(2, f"comal: {message}\n")


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag of `parser` and of the subcommand parsers registered under it."""
    found: list[str] = []
    for action in parser._actions:
        found += [s for s in action.option_strings if s.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _option_strings(sub)
    return list(dict.fromkeys(found))


def _suggest(parser: argparse.ArgumentParser, message: str) -> str:
    """`unrecognized arguments: --alowed-tools x` → `unknown option --alowed-tools (did you
    mean --allowed-tools?)`."""
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return message
    flags = [word for word in message.removeprefix(prefix).split() if word.startswith("-")]
    if not flags:
        return message
    import difflib

    flag = flags[0].split("=", 1)[0]
    known = _option_strings(parser)
    lowered = {name.lower(): name for name in known}
    close = difflib.get_close_matches(flag.lower(), list(lowered), n=1, cutoff=0.6)
    hint = f" (did you mean {lowered[close[0]]}?)" if close else " (`comal --help` lists them)"
    return f"unknown option {flag}{hint}"


def command_of(argv: Sequence[str], parser: argparse.ArgumentParser) -> str | None:
    """The subcommand `argv` names: its first positional word, when it is a command."""
    takes_value = {
        flag
        for action in parser._actions
        if action.option_strings
        and action.nargs in (None, "?")
        and not isinstance(action, argparse._StoreConstAction | argparse._StoreTrueAction)
        and not isinstance(action, argparse._VersionAction | argparse._HelpAction)
        for flag in action.option_strings
    }
    skip = False
    for word in argv:
        if skip:
            skip = False
            if not word.startswith("-"):
                continue
        if word == "--":
            return None
        if word.startswith("-"):
            skip = word in takes_value
            continue
        return word if word in COMMANDS else None
    return None


def top_parser(*, task: bool) -> Parser:
    epilog = "commands:\n" + "\n".join(
        f"  {name:<12} {help_text}" for name, (_, help_text) in COMMANDS.items()
    )
    parser = Parser(
        prog="comal",
        usage=USAGE if task else None,
        description="A terminal coding agent with memory to the limit.",
        epilog=epilog + "\n\n`comal COMMAND --help` describes one command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"comal {__version__}")
    register_top_level(parser, task=task)
    parser.set_defaults(func=None, command=None)
    return parser


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The argument parser for `argv`: with the subcommand it names, else with TASK."""
    parser = top_parser(task=False)
    command = command_of(argv, parser)
    if command is None:
        return top_parser(task=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    importlib.import_module(COMMANDS[command][0]).register(sub)
    return parser


def full_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand registered (imports them all: for tests and docs)."""
    parser = top_parser(task=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        importlib.import_module(module).register(sub)
    return parser


def _json_mode(argv: Sequence[str]) -> bool:
    for i, word in enumerate(argv):
        if word == "--json":
            return True
        if word.startswith("--output-format="):
            return word.split("=", 1)[1] != "text"
        if word == "--output-format" and i + 1 < len(argv):
            return argv[i + 1] != "text"
    return False


def _print_failure(args: argparse.Namespace, line: str, code: str, message: str) -> None:
    """One line on stderr; in JSON modes, also the error object on stdout (its data channel)."""
    print(f"comal: {line}", file=sys.stderr)
    if getattr(args, "json", False) or Parser.json_errors:
        body = {"error": {"code": code, "message": message}}
        with contextlib.suppress(OSError):  # stdout itself failed: the line on stderr says so
            print(json.dumps(body, ensure_ascii=False), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    Parser.json_errors = _json_mode(words)
    parser = build_parser(words)
    args = parser.parse_args(words)
    if args.command is None:
        args.func = importlib.import_module(RUNNER_MODULE).run_command
    func = cast("Callable[[argparse.Namespace], Coroutine[Any, Any, int]]", args.func)
    return _run(args, func)


def _run(
    args: argparse.Namespace, func: Callable[[argparse.Namespace], Coroutine[Any, Any, int]]
) -> int:
    from comal.cli._signals import StoppedBySignal, run_stoppable
    from comal.cli.failures import explain, watch_stdout

    watch_stdout()

    try:
        return run_stoppable(func(args))
    except StoppedBySignal as exc:
        _print_failure(args, f"stopped by {exc}", "INTERRUPTED", f"stopped by {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _print_failure(args, "interrupted", "INTERRUPTED", "interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place every failure becomes one line
        error = explain(exc)
        _print_failure(args, str(error), error.code, error.message)
        return error.exit_code
