"""`comal export UUID --format md|html|json [-o FILE]`: a session's transcript to keep or share.

HTML is one self-contained page (the context timeline inline as SVG; `--no-timeline` leaves it
out and skips matplotlib). Without `-o` the export goes to stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from comal.cli.cmd_context import emit, recorded_engine
from comal.cli.cmd_sessions import session_json
from comal.cli.configuring import read_only_config
from comal.cli.export_render import to_html, to_json, to_markdown, transcript_items
from comal.cli.timeline import timeline_of, timeline_svg
from comal.errors import ConfigError
from comal.ledger.store import Ledger
from comal.session import render_cost, session_cost, with_shown_status, with_status


async def _run(args: argparse.Namespace) -> int:
    config = read_only_config()
    with Ledger.open(config.ledger) as ledger:
        session_id = ledger.resolve(args.session)
        row = ledger.session(session_id)
        # JSON keeps the indexed status, as `sessions --json` does; people read the shown one.
        info = with_status(ledger, row)
        shown = with_shown_status(ledger, row)
        entries = ledger.entries(session_id)
        bodies = {e.id: ledger.body(e) for e in entries if e.body_hash is not None}
        cost_line = render_cost(session_cost(entries, config.prices))
        short = ledger.short_id(session_id)
        svg = None
        if args.format == "html" and not args.no_timeline:
            engine = recorded_engine(ledger, session_id, config)
            # The threshold `comal context` reports, so the picture and the report agree.
            threshold = engine.report().threshold_tokens
            picture = timeline_of(entries, engine.window()[0], threshold)
            svg = timeline_svg(picture, f"session {session_id} · {engine.model}")
    if args.format == "json":
        text = to_json(session_json(info, short, info.title), entries, bodies)
    else:
        items = transcript_items(entries, bodies)
        text = (
            to_html(shown, items, cost_line, svg)
            if args.format == "html"
            else to_markdown(shown, items, cost_line)
        )
    if args.output is None:
        emit(text)
        return 0
    try:
        args.output.write_text(text, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise ConfigError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal export`."""
    parser = subparsers.add_parser("export", help="a session's transcript as md, html or json")
    parser.add_argument("session", metavar="UUID", help="session id or unique prefix")
    parser.add_argument("--format", choices=("md", "html", "json"), default="md")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE")
    parser.add_argument(
        "--no-timeline", action="store_true", help="HTML without the context timeline"
    )
    parser.set_defaults(func=_run)
