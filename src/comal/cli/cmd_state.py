"""`comal state UUID [--json]`: the `/state` view of a recorded session.

Read-only: the state is computed from the ledger (status, lock, board, pending and uncertain
calls, last checkpoint, evidence count, usage totals); nothing is written and no lock is taken,
so it works on a session another process is running. Data goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys

from comal.agent.features.state import render_state, session_state, state_to_json
from comal.cli.configuring import read_only_config
from comal.ledger.store import Ledger


async def run_state(args: argparse.Namespace) -> int:
    """Print one session's state."""
    config = read_only_config()
    with Ledger.open(config.ledger) as ledger:
        state = session_state(ledger, ledger.resolve(args.session), config.prices)
    if args.json:
        text = json.dumps(state_to_json(state), ensure_ascii=False, indent=2)
    else:
        text = render_state(state)
    sys.stdout.buffer.write((text + "\n").encode("utf-8", "backslashreplace"))
    sys.stdout.buffer.flush()
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `state` to the CLI."""
    state = subparsers.add_parser(
        "state", help="a session's status, lock, board, pending/uncertain calls and usage"
    )
    state.add_argument("session", metavar="ID", help="short id, session id, or a unique prefix")
    state.add_argument("--json", action="store_true", help="print the state as JSON")
    state.set_defaults(func=run_state)
