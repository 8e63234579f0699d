"""`comal ledger migrate --to TARGET`: copy the configured ledger to another engine, losslessly.

TARGET is a `postgresql://` URL or `sqlite:PATH`. Every session is copied in its own
transaction (a reader never sees half of one), keeping every seq, id, payload byte, content
hash and blob; a run killed midway is resumed by running it again (sessions copied whole are
skipped). Then both sides are compared — entry counts, the digest of every entry's seq, id and
content hash, blob counts — and both are verified; any difference exits 3.
"""

from __future__ import annotations

import argparse

from comal.cli.cmd_context import emit, emit_json
from comal.config import LEDGER_SCHEMES, load_config
from comal.errors import LedgerError
from comal.ledger.engine import redact
from comal.ledger.store import Ledger


async def run_migrate(args: argparse.Namespace) -> int:
    """Copy, compare and verify; exit 3 when the two sides differ or one does not verify."""
    to = str(args.to)
    if not to.startswith(LEDGER_SCHEMES):
        raise LedgerError(f"--to must be a postgresql:// URL or sqlite:PATH, got {to!r}")
    source = load_config().ledger
    if redact(str(source)) == redact(to) or f"sqlite:{source}" == to:
        raise LedgerError("--to names the ledger being migrated; give another one")
    with Ledger.open(source) as here, Ledger.open(to) as there:
        copied = here.migrate_to(there)
        mine, theirs = here.fingerprint(), there.fingerprint()
        checked = here.verify(), there.verify()
        places = here.location, there.location
    same = mine == theirs and all(report.ok for report in checked)
    if args.json:
        emit_json(
            {
                "from": places[0],
                "to": places[1],
                "sessions_copied": copied.sessions,
                "sessions_skipped": copied.skipped,
                "entries_copied": copied.entries,
                "blobs_copied": copied.blobs,
                "entries": [mine[0], theirs[0]],
                "blobs": [mine[1], theirs[1]],
                "hashes": [mine[2], theirs[2]],
                "verified": [report.ok for report in checked],
                "same": same,
            }
        )
        return 0 if same else 3
    emit(
        f"copied {copied.sessions} sessions ({copied.skipped} already copied), {copied.entries}"
        f" entries and {copied.blobs} blobs from {places[0]} to {places[1]}\n"
        f"{'ok' if mine == theirs else 'DIFFERENT'}: {mine[0]} entries and {mine[1]} blobs here,"
        f" {theirs[0]} and {theirs[1]} there; entry hashes {mine[2][:19]}… and {theirs[2][:19]}…\n"
        f"{'ok' if checked[0].ok else 'FAILED'}: verify here · "
        f"{'ok' if checked[1].ok else 'FAILED'}: verify there\n"
    )
    return 0 if same else 3


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal ledger migrate`."""
    ledger = subparsers.add_parser("ledger", help="move the ledger to another engine")
    actions = ledger.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    migrate = actions.add_parser(
        "migrate",
        help="copy every session, entry and blob to another ledger (resumable), then compare",
    )
    migrate.add_argument(
        "--to", required=True, metavar="TARGET", help="a postgresql:// URL or sqlite:PATH"
    )
    migrate.add_argument("--json", action="store_true", help="print the report as JSON")
    migrate.set_defaults(func=run_migrate)
