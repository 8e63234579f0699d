"""`comal evidence UUID REF`: read recorded evidence exactly, page by page, or search it.

The page text goes to stdout; the header (digest, range) and the next call go to stderr, so
`comal evidence … > out.txt` saves exactly the page. `--json` prints the full answer instead.
"""

from __future__ import annotations

import argparse
import json
import sys

from comal.cli.cmd_context import emit, emit_json
from comal.cli.configuring import read_only_config
from comal.evidence.read import PAGE_UNITS, read_evidence
from comal.ledger.store import Ledger


async def _run(args: argparse.Namespace) -> int:
    with Ledger.open(read_only_config().ledger) as ledger:
        session_id = ledger.resolve(args.session)
        page = read_evidence(
            ledger,
            session_id,
            args.ref,
            field=args.field,
            offset=args.offset,
            limit=args.limit,
            search=args.search,
            regex=args.regex,
            expected_digest=args.digest,
        )
    if args.json:
        emit_json(page.to_json())
        return 0
    print(
        f"[{page.ref} · {page.field} · {page.digest} · units {page.offset}–"
        f"{page.offset + page.length} of {page.total_units}]",
        file=sys.stderr,
    )
    if page.search is not None:
        for hit in page.hits:
            emit(f"{hit.offset}\t{hit.line}\t{hit.snippet}\n")
    else:
        emit(page.text)
    if page.next_call is not None:
        print(f"[next: {json.dumps(page.next_call, sort_keys=True)}]", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal evidence`."""
    parser = subparsers.add_parser("evidence", help="read recorded evidence exactly (no re-run)")
    parser.add_argument("session", metavar="ID", help="short id, session id, or a unique prefix")
    parser.add_argument("ref", metavar="REF", help="evidence id (evt_…)")
    parser.add_argument(
        "--field", default="output", choices=("output", "text", "arguments", "media")
    )
    parser.add_argument("--offset", type=int, default=0, help="start, in UTF-16 code units")
    parser.add_argument("--limit", type=int, default=PAGE_UNITS, help="page length (≤ 8000)")
    parser.add_argument("--search", help="find this text from --offset on")
    parser.add_argument("--regex", action="store_true", help="--search is a regex")
    parser.add_argument("--digest", help="expected sha256:… of the evidence")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.set_defaults(func=_run)
