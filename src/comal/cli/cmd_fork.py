"""`comal fork UUID [--at ENTRY]`: a new session whose history is the parent's up to a point.

Nothing is copied: the fork's row links to the parent and the fork point, and its view is
rebuilt from the parent's entries (`ledger/history.py`). The fork has its own id and lock, so
it can run while the parent does.
"""

from __future__ import annotations

import argparse

from comal.cli.cmd_context import emit, emit_json
from comal.config import load_config
from comal.errors import RewindError
from comal.ledger.records import Kind
from comal.ledger.store import Ledger

FORK_POINT_SKIPS = frozenset({Kind.LOCK_ACQUIRED, Kind.LOCK_RECLAIMED, Kind.SESSION_FINISHED})
"""Entries a default fork point passes over: they belong to the parent's process."""


def fork_point(ledger: Ledger, session_id: str, at: str | None) -> int:
    """The seq of the last parent entry the fork includes.

    Raises:
        RewindError: `at` is not an entry of the session's history.
    """
    entries = ledger.entries(session_id)
    if at is None:
        kept = [e for e in entries if e.kind not in FORK_POINT_SKIPS]
        if not kept:
            raise RewindError(f"session {session_id} has no entry to fork from")
        return kept[-1].seq
    for entry in entries:
        if entry.id == at or (at.isdigit() and entry.seq == int(at)):
            return entry.seq
    raise RewindError(f"{at!r} is not an entry (evt_… or seq) of session {session_id}")


async def _run(args: argparse.Namespace) -> int:
    with Ledger.open(load_config().ledger) as ledger:
        parent = ledger.resolve(args.session)
        seq = fork_point(ledger, parent, args.at)
        fork = ledger.fork_session(parent, through_seq=seq, title=args.title or "")
        inherited = len(ledger.entries(fork)) - 1
    if args.json:
        emit_json({"session": fork, "parent": parent, "through_seq": seq, "entries": inherited})
        return 0
    emit(
        f"forked {parent} at seq {seq} into {fork} ({inherited} entries of history)\n"
        f"continue it with: comal --resume {fork}\n"
    )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal fork`."""
    parser = subparsers.add_parser(
        "fork", help="start a new session from a session's history up to an entry"
    )
    parser.add_argument("session", metavar="UUID", help="session id or unique prefix")
    parser.add_argument(
        "--at", metavar="ENTRY", help="the last entry kept (evt_… or seq); default the latest"
    )
    parser.add_argument("--title", help="the fork's title (default the parent's)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(func=_run)
