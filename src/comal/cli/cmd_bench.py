"""`comal bench replay PATH…`: replay recorded sessions through context policies, no model.

Options: `--window 32k,64k,128k`, `--policy raw,comal,…`, `--jobs N` (worker processes),
`--json FILE`, `--md FILE`, `--png FILE`. The Markdown table always goes to stdout; progress
goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from comal.errors import ConfigError

# `comal.bench` (numpy, and matplotlib for --png) is imported by `run` only: every other
# command, `--help` included, starts without it.


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `bench` subcommand (with `replay`)."""
    parser = subparsers.add_parser("bench", help="benchmarks (replay of recorded sessions)")
    sub = parser.add_subparsers(dest="bench_command", metavar="BENCH", required=True)
    replay = sub.add_parser(
        "replay",
        help="replay recorded sessions call by call through context policies",
        description="Replay recorded sessions through Comal's engine and peers' context "
        "strategies, with no model, and report cost, cache use, overflows and facts kept.",
    )
    replay.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    replay.add_argument("--window", default="32k,64k,128k", help="windows, e.g. 32k,64000")
    replay.add_argument(
        "--policy", help="comma list of policies (default: all; docs/benchmarks.md lists them)"
    )
    replay.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    replay.add_argument("--json", type=Path, dest="json_path", metavar="FILE")
    replay.add_argument("--md", type=Path, dest="md_path", metavar="FILE")
    replay.add_argument("--png", type=Path, dest="png_path", metavar="FILE")
    replay.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Run the replay and write the reports."""
    from comal.bench import parse_policies, parse_windows, run_replay
    from comal.bench.report import markdown_table, write_json, write_png

    try:
        windows = parse_windows(args.window)
        policies = parse_policies(args.policy)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    started = time.monotonic()
    result = await run_replay(
        args.paths,
        windows,
        policies,
        jobs=max(1, args.jobs),
        progress=lambda line: print(line, file=sys.stderr),
    )
    table = markdown_table(result.aggregate)
    sys.stdout.write(table)
    if args.json_path:
        write_json(args.json_path, result.rows, result.aggregate)
    if args.md_path:
        args.md_path.write_text(table, encoding="utf-8")
    if args.png_path:
        write_png(args.png_path, result.aggregate)
    elapsed = time.monotonic() - started
    print(f"replayed {result.files} file(s) in {elapsed:.1f} s", file=sys.stderr)
    return 0
