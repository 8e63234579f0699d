"""`comal import FILE… [--format F] [--json]`: other agents' recorded sessions into the ledger.

Every file is parsed before anything is written, so a malformed file (reported with its file
and line) leaves the ledger untouched. Prints the new session ids (one per line; children
after their parent), or with `--json` one JSON document describing each imported session.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from comal.cli.configuring import run_config
from comal.importers import FORMATS, import_files
from comal.ledger import Ledger


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `import` subcommand."""
    parser = subparsers.add_parser(
        "import",
        help="import recorded sessions of other agents",
        description="Import Claude Code, Codex CLI, mini-swe-agent or SWE-agent sessions "
        "as ordinary Comal sessions.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("--format", choices=FORMATS, help="skip format detection")
    parser.add_argument("--json", action="store_true", help="print a JSON document")
    parser.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Import the files and print the new session ids."""
    with Ledger.open(run_config().ledger_path, durable=False) as ledger:
        written = import_files(ledger, args.files, args.format)
    if args.json:
        doc = {
            "sessions": [
                {
                    "id": s.session_id,
                    "parent_id": s.parent_id,
                    "file": s.path,
                    "label": s.label,
                    "source": s.source,
                    "entries": s.entries,
                }
                for s in written
            ]
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        for session in written:
            sys.stdout.write(session.session_id + "\n")
    print(f"imported {len(written)} session(s) from {len(args.files)} file(s)", file=sys.stderr)
    return 0
