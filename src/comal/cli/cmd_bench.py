"""`comal bench replay PATH…`: replay recorded sessions through context policies, no model.

Options: `--window 32k,64k,128k`, `--policy raw,comal,…`, `--jobs N` (worker processes),
`--format F` (skip detection), `--explain SESSION` (replay the files whose path holds SESSION
and print their worst events by regret), `--split A|B` (one half of the files, by a sha256 of each
file's path relative to the PATH it was found under; the report says which), `--cache-ttl
SECONDS` (the prompt cache's time-to-live, 300 by default; `none` for a cache that never
expires), `--strict`, `--json FILE`, `--md FILE`, `--png FILE`. The Markdown table and verdict
lines always go to stdout; progress goes to stderr. A file that cannot be read is skipped and
listed on stderr with its reason, and so is every file of a folder searched that no importer
reads (a README, the set's manifest); the exit status is non-zero only when nothing could be
read, or with `--strict` when a session file could not be read.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from comal.errors import ConfigError, ImportFormatError
from comal.importers import FORMATS

# `comal.replay` (numpy, and matplotlib for --png) is imported by `run` only: every other
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
    replay.add_argument("--format", choices=FORMATS, help="skip format detection")
    replay.add_argument(
        "--cache-ttl",
        default="300",
        metavar="SECONDS",
        help="prompt cache time-to-live: a call after a longer recorded gap is billed uncached"
        " (default 300; 'none': never expires)",
    )
    replay.add_argument(
        "--split",
        type=str.upper,
        choices=("A", "B"),
        help="only one half of the files, by a sha256 of each file's path relative to the"
        " PATH it was found under (the same half on every machine)",
    )
    replay.add_argument(
        "--explain",
        metavar="SESSION",
        help="replay only the files whose path holds SESSION and print their worst events"
        " (trigger, sizes, the facts lost that the next 10 calls use)",
    )
    replay.add_argument("--strict", action="store_true", help="fail when any file cannot be read")
    replay.add_argument("--json", type=Path, dest="json_path", metavar="FILE")
    replay.add_argument("--md", type=Path, dest="md_path", metavar="FILE")
    replay.add_argument("--png", type=Path, dest="png_path", metavar="FILE")
    replay.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Run the replay and write the reports."""
    from comal.replay import parse_policies, parse_windows, run_replay
    from comal.replay.metrics import aggregate_by_source
    from comal.replay.report import (
        explain_lines,
        markdown_report,
        split_line,
        write_json,
        write_png,
    )

    try:
        windows = parse_windows(args.window)
        policies = parse_policies(args.policy)
        ttl = _cache_ttl(args.cache_ttl)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    started = time.monotonic()
    result = await run_replay(
        args.paths,
        windows,
        policies,
        jobs=max(1, args.jobs),
        progress=lambda line: print(line, file=sys.stderr),
        fmt=args.format,
        cache_ttl_s=ttl,
        split=args.split,
        match=args.explain,
    )
    for path, reason in (*result.unread, *result.skipped):
        print(f"skipped {path}: {reason}", file=sys.stderr)
    read = result.files - len(result.skipped)
    if read == 0:
        raise ImportFormatError(f"no recorded session could be read ({result.files} file(s))")
    table = split_line(result.split, result.files, result.found) + markdown_report(
        result.aggregate, aggregate_by_source(result.rows)
    )
    sys.stdout.write(table)
    if args.explain:
        sys.stdout.write("\n" + explain_lines(result.rows, args.explain))
    if args.json_path:
        write_json(args.json_path, result.rows, result.aggregate, split=result.split)
    if args.md_path:
        args.md_path.write_text(table, encoding="utf-8")
    if args.png_path:
        write_png(args.png_path, result.aggregate)
    elapsed = time.monotonic() - started
    print(
        f"replayed {read} file(s) in {elapsed:.1f} s; skipped "
        f"{len(result.skipped) + len(result.unread)} ({len(result.unread)} that no importer"
        " reads)",
        file=sys.stderr,
    )
    if args.strict and result.skipped:
        print("--strict: some files could not be read", file=sys.stderr)
        return ImportFormatError.exit_code
    return 0


def _cache_ttl(text: str) -> float | None:
    """Seconds ≥ 0 from `--cache-ttl`, or None for `none`.

    Raises:
        ValueError: anything else.
    """
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"bad --cache-ttl {text!r}: seconds ≥ 0, or none")
    return value
