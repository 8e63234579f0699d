"""`comal import FILE… [--format F] [--new] [--json]`: other agents' sessions into the ledger.

Every file is parsed before anything is written, so a malformed file (reported with its file
and line) leaves the ledger untouched. Prints the session ids (one per line; children after
their parent), or with `--json` one JSON document describing each session. A file imported
before gives back the sessions already imported from it (`"existing": true`), unless `--new`.
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
        description="Import Claude Code, Codex CLI, Gemini CLI, mini-swe-agent, SWE-agent, "
        "OpenHands or Aider sessions as ordinary Comal sessions.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("--format", choices=FORMATS, help="skip format detection")
    parser.add_argument(
        "--new", action="store_true", help="import again a file imported before (a new copy)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON document")
    parser.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    """Import the files and print the new session ids."""
    with Ledger.open(run_config().ledger, durable=False) as ledger:
        written = import_files(ledger, args.files, args.format, new=args.new)
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
                    "existing": s.existing,
                }
                for s in written
            ]
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        for session in written:
            sys.stdout.write(session.session_id + "\n")
    existing = sum(1 for s in written if s.existing)
    print(
        f"imported {len(written) - existing} session(s) from {len(args.files)} file(s)"
        + (f"; {existing} already imported" if existing else ""),
        file=sys.stderr,
    )
    return 0
