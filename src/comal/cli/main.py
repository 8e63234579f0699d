"""Command-line entry point: `comal …` and `python -m comal`.

Each subcommand lives in its own `cli/cmd_*.py` module exposing `register(subparsers)`; the
module sets `func` (an `async def (args) -> int`) on its parser. The top-level flags (`-p`,
`--resume`, `--continue`, model selection) belong to the headless runner. Data goes to stdout,
progress and errors to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, cast

from comal import __version__
from comal.cli._signals import StoppedBySignal, run_stoppable
from comal.cli.failures import explain
from comal.errors import ComalError

COMMAND_MODULES: tuple[str, ...] = (
    "comal.cli.cmd_sessions",
    "comal.cli.cmd_demo",
    "comal.cli.cmd_import",
    "comal.cli.cmd_bench",
    "comal.cli.cmd_models",
    "comal.cli.cmd_context",
    "comal.cli.cmd_compact",
    "comal.cli.cmd_checkpoints",
    "comal.cli.cmd_evidence",
    "comal.cli.cmd_state",
    "comal.cli.cmd_plugins",
    "comal.cli.cmd_rewind",
    "comal.cli.cmd_fork",
    "comal.cli.cmd_export",
    "comal.cli.cmd_ledger",
)
"""Subcommand modules, in the order `--help` lists them."""

RUNNER_MODULE = "comal.cli.cmd_run"
"""Module that adds the top-level headless flags (`-p`, `--resume`, …) and runs the agent."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = argparse.ArgumentParser(
        prog="comal",
        description="A terminal coding agent with memory to the limit.",
    )
    parser.add_argument("--version", action="version", version=f"comal {__version__}")
    importlib.import_module(RUNNER_MODULE).register_top_level(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _print_failure(args: argparse.Namespace, error: ComalError) -> None:
    """One line on stderr; with `--json`, also the error object on stdout (its data channel)."""
    print(f"comal: {error}", file=sys.stderr)
    if getattr(args, "json", False):
        body = {"error": {"code": error.code, "message": error.message}}
        print(json.dumps(body, ensure_ascii=False), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    func = cast(
        "Callable[[argparse.Namespace], Coroutine[Any, Any, int]] | None",
        getattr(args, "func", None),
    )
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return run_stoppable(func(args))
    except StoppedBySignal as exc:
        print(f"comal: stopped by {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("comal: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place every failure becomes one line
        error = explain(exc)
        _print_failure(args, error)
        return error.exit_code
