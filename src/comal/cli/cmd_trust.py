"""`comal trust [--yes]`: review the project's hooks and MCP servers and trust them.

A project file that configures hooks or MCP servers (`.comal/config.toml`,
`.claude/settings*.json`, `.mcp.json`) runs nothing until its current content is trusted
(`config_trust`). This command shows every such file that is new or changed and records the
trust on a `y` (or at once with `--yes`, for scripts that wrote the files themselves).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from comal.cli.trusting import describe, review_untrusted
from comal.config import load_config
from comal.config_trust import untrusted_files


async def _run(args: argparse.Namespace) -> int:
    cwd: Path | None = getattr(args, "cwd", None)  # the top-level `--cwd`
    return _review(cwd, assume_yes=args.yes)


def _review(cwd: Path | None, *, assume_yes: bool) -> int:
    config = load_config(cwd=cwd.resolve() if cwd else None)
    files = untrusted_files(config.workspace, config.config_dir)
    if not files:
        print(f"comal: nothing to trust in {config.workspace}")
        return 0
    if review_untrusted(config.workspace, config.config_dir, assume_yes=assume_yes):
        return 0
    if not assume_yes and not sys.stdin.isatty():
        print(describe(files))
        print("comal: not trusted (no terminal to ask on); `comal trust --yes` trusts them")
    return 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal trust`."""
    parser = subparsers.add_parser(
        "trust", help="review the project's hooks and MCP servers and trust them"
    )
    parser.add_argument("--yes", action="store_true", help="trust without asking")
    parser.set_defaults(func=_run)
