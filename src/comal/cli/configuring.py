"""Loading the configuration for a command, and showing its warnings once on stderr.

Commands that only read the ledger (`sessions`, `show`, `verify`, `state`, `context`,
`evidence`, `checkpoints`) load it leniently: a broken config file is a warning there, since
they need little more than where the ledger is.
"""

from __future__ import annotations

import sys
from pathlib import Path

from comal.cli.trusting import review_untrusted
from comal.config import Config, load_config


def warn(config: Config) -> Config:
    """Print the configuration's warnings to stderr and return it."""
    for warning in config.warnings:
        print(f"comal: warning: {warning}", file=sys.stderr)
    return config


def run_config(cwd: Path | None = None, *, review: bool = False) -> Config:
    """The configuration for a command that runs a session (a broken file stops it).

    What project files that are not trusted yet configure to run (hooks, MCP servers) is left
    out and said so (`comal trust` reviews them); with `review` (starting a session), they are
    shown and trusted on the spot when a person answers on a terminal.
    """
    config = load_config(cwd=cwd, gated=True)
    if review and config.untrusted and review_untrusted(config.workspace, config.config_dir):
        config = load_config(cwd=cwd, gated=True)
    return warn(config)


def read_only_config() -> Config:
    """The configuration for a read-only command (a broken file is only a warning)."""
    return warn(load_config(lenient=True))
