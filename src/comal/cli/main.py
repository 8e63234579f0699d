"""Command-line entry point: `comal …` and `python -m comal`.

Each subcommand lives in its own `cli/cmd_*.py` module exposing `register(subparsers)`; the
module sets `func` (an `async def (args) -> int`) on its parser. The top-level flags (`-p`,
`--resume`, `--continue`, model selection) belong to the headless runner. Data goes to stdout,
progress and errors to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, cast

from comal import __version__
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
    "comal.cli.cmd_rewind",
    "comal.cli.cmd_fork",
    "comal.cli.cmd_export",
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
        return asyncio.run(func(args))
    except ComalError as exc:
        print(f"comal: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("comal: interrupted", file=sys.stderr)
        return 130
