"""`comal rewind UUID [--to TURN|cp:N|ENTRY]`: restore a session's files and conversation.

Without `--to` it lists the session's turns, each with the files it changed and the calls it
cannot undo, and changes nothing. With `--to` it restores files byte for byte from the ledger
(refusing files changed outside the session unless `--force`) and records the rewind.
"""

from __future__ import annotations

import argparse

from comal.agent.features.rewind import apply_rewind, plan_rewind, turn_label, turns
from comal.cli.cmd_context import emit, emit_json
from comal.config import load_config
from comal.ledger.store import Ledger


async def _run(args: argparse.Namespace) -> int:
    with Ledger.open(load_config().ledger) as ledger:
        session_id = ledger.resolve(args.session)
        if args.to is None:
            listed = turns(ledger, session_id)
            if args.json:
                emit_json(
                    {
                        "session": session_id,
                        "turns": [
                            {
                                "number": t.number,
                                "entry": t.entry_id,
                                "text": t.text,
                                "files": list(t.files),
                                "not_restorable": list(t.not_restorable),
                            }
                            for t in listed
                        ],
                    }
                )
                return 0
            emit("\n".join([turn_label(t) for t in listed] or ["(no turns)"]) + "\n")
            emit("rewind with --to N (before turn N), --to cp:N or --to evt_…\n")
            return 0
        # The conversation is rewound in the session itself: no live process may hold it.
        ledger.acquire_lock(session_id)
        plan = plan_rewind(ledger, session_id, args.to)
        entry = apply_rewind(
            ledger,
            plan,
            files=not args.conversation_only,
            conversation=not args.files_only,
            force=args.force,
        )
    if args.json:
        emit_json({"session": session_id, "entry": entry.id, **entry.payload})
        return 0
    emit(f"rewound session {session_id} to {plan.label} (entry {entry.id})\n")
    if not args.conversation_only:
        for item in plan.files:
            if not item.restorable:
                emit(f"  not restored {item.path}: {item.reason}\n")
            elif item.unchanged:
                emit(f"  unchanged {item.path}\n")
            else:
                verb = "removed" if item.target is None else "restored"
                forced = (
                    " (overwrote changes made outside, --force)" if item.changed_outside else ""
                )
                emit(f"  {verb} {item.path}{forced}\n")
    for line in plan.not_restorable:
        emit(f"  not restorable (Comal cannot know what it changed): {line}\n")
    if not args.files_only:
        emit("  the conversation continues from that point: comal --resume " + session_id + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal rewind`."""
    parser = subparsers.add_parser(
        "rewind", help="restore a session's files and conversation to an earlier point"
    )
    parser.add_argument("session", metavar="UUID", help="session id or unique prefix")
    parser.add_argument(
        "--to",
        metavar="POINT",
        help="a turn number (the state before it), cp:N (a checkpoint) or an entry id evt_…",
    )
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--files-only", action="store_true", help="restore files, keep the talk")
    only.add_argument(
        "--conversation-only", action="store_true", help="rewind the talk, leave files as they are"
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite files changed outside the session"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(func=_run)
