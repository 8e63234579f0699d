"""`comal checkpoints UUID [N]`: list a session's checkpoints (number and title), or show one."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from comal.cli.cmd_context import emit, emit_json
from comal.cli.configuring import read_only_config
from comal.context.relief.recorded import Checkpoint, checkpoints
from comal.errors import ComalError
from comal.ledger.records import Kind
from comal.ledger.store import Ledger


class UnknownCheckpointError(ComalError):
    """The session has no checkpoint with that number."""

    code = "UNKNOWN_CHECKPOINT"
    exit_code = 3


def _json(cp: Checkpoint, text: bool) -> dict[str, object]:
    out: dict[str, object] = {
        "number": cp.number,
        "title": cp.title,
        "entry": cp.entry_id,
        "by": cp.by,
        "covers_through_seq": cp.covers_through_seq,
        "tail_from_seq": cp.tail_from_seq,
        "before_tokens": cp.before_tokens,
        "after_tokens": cp.after_tokens,
        "created_at": cp.created_at,
    }
    if text:
        out["text"] = cp.text
    return out


async def _run(args: argparse.Namespace) -> int:
    with Ledger.open(read_only_config().ledger) as ledger:
        session_id = ledger.resolve(args.session)
        found = checkpoints(ledger.entries(session_id, kinds=(Kind.CHECKPOINT,)))
    if args.number is None:
        if args.json:
            emit_json({"session": session_id, "checkpoints": [_json(c, False) for c in found]})
            return 0
        if not found:
            emit("(no checkpoints)\n")
        for cp in found:
            when = datetime.fromtimestamp(cp.created_at / 1000, UTC).strftime("%Y-%m-%d %H:%M")
            emit(
                f"{cp.number:>3}  {cp.title}  ({when} UTC, by {cp.by},"
                f" ~{cp.before_tokens:,} → ~{cp.after_tokens:,} tokens)\n"
            )
        return 0
    chosen = next((c for c in found if c.number == args.number), None)
    if chosen is None:
        raise UnknownCheckpointError(
            f"session {session_id} has no checkpoint {args.number} ({len(found)} recorded)"
        )
    if args.json:
        emit_json({"session": session_id, **_json(chosen, True)})
    else:
        emit(chosen.text + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal checkpoints`."""
    parser = subparsers.add_parser("checkpoints", help="list a session's checkpoints or show one")
    parser.add_argument("session", metavar="ID", help="short id, session id, or a unique prefix")
    parser.add_argument("number", metavar="N", type=int, nargs="?", help="checkpoint to show")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(func=_run)
