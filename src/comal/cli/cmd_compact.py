"""`comal compact UUID`: derive a checkpoint now, deterministically, with no model call.

When a live process holds the session (a turn may be running), the request is recorded as
`compact.requested` and the running loop derives at its next turn boundary. A checkpoint that
would not make the view smaller is refused (COMPACT_NOT_SMALLER, exit 5) with its figures and
recorded as `compact.cancelled`; nothing else changes.
"""

from __future__ import annotations

import argparse
import sys

from comal.agent.turns import request_compaction
from comal.cli.cmd_context import emit, emit_json, recorded_engine
from comal.cli.configuring import run_config
from comal.ledger.store import Ledger


async def _run(args: argparse.Namespace) -> int:
    config = run_config()
    with Ledger.open(config.ledger) as ledger:
        session_id = ledger.resolve(args.session)
        holder = ledger.lock_holder(session_id)
        if holder is not None:
            request_compaction(ledger, session_id)
            print(
                f"comal: session {session_id} is running (pid {holder.pid}); the checkpoint"
                " will be derived at its next turn boundary (or refused there if it would not"
                " make the view smaller)",
                file=sys.stderr,
            )
            if args.json:
                emit_json({"session": session_id, "requested": True, "checkpoint": None})
            return 0
        ledger.acquire_lock(session_id)
        try:
            checkpoint = recorded_engine(ledger, session_id, config).compact(by="user")
        finally:
            ledger.release_lock(session_id)
    if args.json:
        emit_json(
            {
                "session": session_id,
                "requested": False,
                "checkpoint": {
                    "number": checkpoint.number,
                    "title": checkpoint.title,
                    "entry": checkpoint.entry_id,
                    "before_tokens": checkpoint.before_tokens,
                    "after_tokens": checkpoint.after_tokens,
                    "tail_from_seq": checkpoint.tail_from_seq,
                },
            }
        )
    else:
        emit(
            f"checkpoint {checkpoint.number} · {checkpoint.title}\n"
            f"~{checkpoint.before_tokens:,} → ~{checkpoint.after_tokens:,} tokens"
            f" ({checkpoint.entry_id})\n"
        )
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal compact`."""
    parser = subparsers.add_parser(
        "compact",
        help="derive a checkpoint now (deterministic, no model call; refused when it would not"
        " make the view smaller)",
    )
    parser.add_argument("session", metavar="ID", help="short id, session id, or a unique prefix")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(func=_run)
