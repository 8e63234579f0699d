"""`comal sessions`, `comal show UUID` and `comal verify [UUID]`: read-only views of the ledger.

Data goes to stdout, in plain text or (`--json`) as one JSON document; errors go to stderr
through the ComalError handler in `cli.main`. A session is named by its short id (as
`comal sessions` lists it), its full id, or a unique prefix of either.
Output is written as UTF-8 with lone surrogates (kept exactly in the ledger) escaped as
`\\udcXX`, which is also what a JSON parser reads back into the original string.
Plain mode shortens long tool outputs; `--json` always carries every byte as text.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, assert_never

from comal.cli.configuring import read_only_config
from comal.cli.sessions_watch import follow, session_hosts, since_ms, wanted
from comal.errors import LedgerError
from comal.ids import now_ms
from comal.ledger import Entry, Ledger, SessionInfo, VerifyReport
from comal.ledger.engine import is_pg_url, redact, sqlite_path
from comal.ledger.records import Kind, UserMessage, kind_of
from comal.ledger.salvage import resolve_in_file, verify_file
from comal.messages import (
    JSONObject,
    JSONValue,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_from_json,
    render_output_text,
)
from comal.session import SHOWN_STATUSES, shown_status, with_shown_status, with_status

SCREEN_LINES = 20
"""Plain `show` prints this many lines of a tool output…"""
SCREEN_CHARS = 2000
"""…and at most this many characters, cut after a whole line; `comal evidence` reads on."""
PLAIN_OUTPUT_HEAD_CHARS = 1500
"""Plain `show` prints this much of a long tool output's start…"""
PLAIN_OUTPUT_TAIL_CHARS = 500
"""…and this much of its end."""
_PLAIN_PAYLOAD_CHARS = 300
LISTED = 50
"""`comal sessions` lists this many top-level sessions unless `--limit` says (JSON: all)."""
TITLE_CHARS = 60
"""`comal sessions` shows this much of a session's first ask."""
_CONTROL = {c: f"\\x{c:02x}" for c in range(32) if chr(c) not in "\n\t"} | {127: "\\x7f"}


def _emit(text: str) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
    sys.stdout.buffer.flush()


def _emit_json(value: Any) -> None:
    _emit(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _plain(text: str) -> str:
    """Text safe for a terminal: control characters other than newline and tab made visible."""
    return text.translate(_CONTROL)


def _open() -> Ledger:
    return Ledger.open(read_only_config().ledger)


def first_ask(entry: Entry | None) -> str:
    """The first line of a session's first user message (its title when it has none)."""
    if entry is None:
        return ""
    raw = UserMessage.from_entry(entry).message
    try:
        message = message_from_json(raw) if raw is not None else None
    except (ValueError, KeyError, TypeError):
        return ""
    text = " ".join(p.text for p in (message.parts if message else ()) if isinstance(p, TextPart))
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def age(ms: int, now: int) -> str:
    seconds = max(0, (now - ms) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def session_json(info: SessionInfo, short: str, title: str) -> JSONObject:
    """The JSON form of a session row (`comal sessions --json`, exports)."""
    return {
        "id": info.id,
        "short_id": short,
        "parent_id": info.parent_id,
        "started_at": info.created_at,
        "started": _utc(info.created_at),
        "cwd": info.cwd,
        "model": info.model,
        "status": info.status,
        "title": title,
        "source": info.source,
        "entries": info.entries,
        "last_activity_at": info.last_activity_at,
        "last_activity": _utc(info.last_activity_at),
        "fork_of": info.fork_of,
        "fork_seq": info.fork_seq,
    }


# --- comal sessions ------------------------------------------------------------------------


def session_tree(infos: list[SessionInfo]) -> list[tuple[int, SessionInfo]]:
    """(depth, session): top-level sessions newest first, each followed by its children and
    forks (oldest first, as they were started), theirs after them."""
    known = {info.id for info in infos}

    def parent(info: SessionInfo) -> str | None:
        up = info.parent_id if info.parent_id in known else info.fork_of
        return up if up in known else None

    kids: dict[str, list[SessionInfo]] = {}
    for info in infos:
        up = parent(info)
        if up is not None:
            kids.setdefault(up, []).append(info)
    out: list[tuple[int, SessionInfo]] = []

    def walk(info: SessionInfo, depth: int) -> None:
        out.append((depth, info))
        # `infos` is newest first; reversed, ties of the same millisecond keep creation order.
        for child in sorted(reversed(kids.get(info.id, [])), key=lambda c: c.created_at):
            walk(child, depth + 1)

    for info in infos:
        if parent(info) is None:
            walk(info, 0)
    return out


def _listed(
    infos: list[SessionInfo], here: str | None, limit: int | None
) -> tuple[list[SessionInfo], int]:
    """The sessions a listing shows: those started in `here` (every one when None), latest
    activity first; `limit` top-level sessions, each with its children and forks (wherever
    they ran). Second: how many more sessions `limit` left out (one walk for both)."""
    ordered = sorted(infos, key=lambda i: i.last_activity_at, reverse=True)
    chosen: list[SessionInfo] = []
    roots, here_ok, shown, everyone = 0, False, False, 0
    for depth, info in session_tree(ordered):
        if depth == 0:
            here_ok = here is None or info.cwd == here
            shown = here_ok and (limit is None or roots < limit)
            roots += shown
        everyone += here_ok
        if shown:
            chosen.append(info)
    return chosen, everyone - len(chosen)


async def run_sessions(args: argparse.Namespace) -> int:
    """List this directory's sessions (`--all`: every one), latest activity first, children
    under their coordinator: short id, age (of the last activity), status, cwd and title;
    `--host`, `--status`, `--since` filter the list and `--follow` then prints each change."""
    if args.follow:
        with _open() as ledger:
            return await follow(ledger, args)
    config = read_only_config()
    # A fleet's filters look at every directory: its sessions run in many.
    filtered = args.host is not None or args.status is not None or args.since is not None
    here = None if args.all or filtered else str(config.workspace)
    limit = args.limit or (None if args.json else LISTED)
    with _open() as ledger:
        every = ledger.sessions()
        if filtered:
            hosts = session_hosts(ledger)
            every = [i for i in every if wanted(with_shown_status(ledger, i), hosts, args)]
        infos, more = _listed(every, here, limit)
        shorts = ledger.short_ids()
        asks = ledger.first_entries(Kind.MESSAGE_USER)
        path = ledger.location
        if args.json:
            infos = [with_status(ledger, info) for info in infos]
        else:
            infos = [with_shown_status(ledger, i) for i in infos]
    tree = session_tree(infos)
    titles = {info.id: info.title or first_ask(asks.get(info.id)) for info in infos}
    if args.json:
        _emit_json(
            [session_json(i, shorts[i.id], titles[i.id]) | {"depth": depth} for depth, i in tree]
        )
        return 0
    if not infos:
        where = path if here is None else f"{here} (`comal sessions --all` lists every directory's)"
        print(f"no sessions recorded in {where}", file=sys.stderr)
        return 0
    now = now_ms()
    header = ("ID", "AGE", "STATUS", "CWD", "TITLE")
    rows = [header] + [
        (
            ("   " * (depth - 1) + " └─ " if depth else "") + shorts[i.id],
            age(i.last_activity_at, now),
            i.status,
            i.cwd,
            titles[i.id] or "-",
        )
        for depth, i in tree
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    _emit(_plain("\n".join(line.rstrip() for line in lines)) + "\n")
    if more:
        print(f"… and {more} older (`--limit N` shows more)", file=sys.stderr)
    return 0


# --- comal show ----------------------------------------------------------------------------


def _shorten(text: str) -> str:
    limit = PLAIN_OUTPUT_HEAD_CHARS + PLAIN_OUTPUT_TAIL_CHARS
    if len(text) <= limit:
        return text
    hidden = len(text) - limit
    return (
        f"{text[:PLAIN_OUTPUT_HEAD_CHARS]}\n"
        f"… {hidden:,} characters not shown (`comal show --json` has all of them) …\n"
        f"{text[-PLAIN_OUTPUT_TAIL_CHARS:]}"
    )


def _indent(text: str, mark: str = "    ") -> str:
    return "\n".join(mark + line for line in text.splitlines() or [""])


def _compact(value: JSONValue, limit: int = _PLAIN_PAYLOAD_CHARS) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _call_line(name: str, arguments: JSONValue, call_id: str, *, verbose: bool) -> str:
    """`→ Bash pytest -q`: the call as its main argument says it (its id with `--verbose`)."""
    from comal.context.relief.workstate import describe_call

    args = arguments if isinstance(arguments, dict) else {}
    said = describe_call(name, args, 300)
    return f"→ {said}" + (f"  [{call_id}]" if verbose else "")


def _message_lines(payload: JSONObject, who: str, *, verbose: bool = True) -> list[str]:
    """An ask or an answer: its words, then (answers) the calls it made."""
    raw = payload.get("message")
    if not isinstance(raw, dict):
        return [f"{who}", _indent(_compact(payload))]
    try:
        message = message_from_json(raw)
    except (ValueError, KeyError, TypeError) as exc:
        return [f"{who} [unreadable message: {exc}]"]
    lines: list[str] = [who]
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(_indent(part.text))
        elif isinstance(part, ReasoningPart):
            lines.append(_indent(f"(reasoning · {len(part.text):,} chars)"))
        elif isinstance(part, ToolCallPart):
            lines.append(
                _indent(_call_line(part.name, part.arguments, part.call_id, verbose=verbose))
            )
        elif isinstance(part, ToolResultPart):
            flag = " (error)" if part.is_error else ""
            lines.append(_indent(f"← {part.name}{flag}  [{part.call_id}]"))
            lines.append(_indent(_shorten(part.content), "    | "))
        else:
            lines.append(_indent(f"[media {part.media_type}]"))
    return lines


def _clip(text: str) -> tuple[str, int]:
    """The start of `text` that fits a screen, cut after a whole line (a single longer line is
    cut), and the UTF-16 offset where the rest starts (what `comal evidence --offset` takes)."""
    lines = text.splitlines(keepends=True)
    shown: list[str] = []
    size = 0
    for line in lines:
        if len(shown) >= SCREEN_LINES or (shown and size + len(line) > SCREEN_CHARS):
            break
        shown.append(line)
        size += len(line)
    if len(shown) == 1 and len(shown[0]) > SCREEN_CHARS:
        shown = [shown[0][:SCREEN_CHARS]]
    head = "".join(shown)
    return head, len(head.encode("utf-16-le", "surrogatepass")) // 2


def _result_lines(
    entry: Entry, body: bytes | None, *, ordinal: int, short: str, verbose: bool
) -> list[str]:
    from comal.context.view.rendering import evidence_text

    p = entry.payload
    exit_code = p.get("exit_code")
    status = f"{p.get('status')}" + ("" if exit_code is None else f" · exit {exit_code}")
    size = p.get("size_bytes", len(body) if body is not None else None)
    shown = f" · {size:,} bytes" if isinstance(size, int) else ""
    receipt = ""
    if verbose:
        digest = p.get("digest")
        receipt = f" · receipt {entry.id}" + (f" {digest}" if isinstance(digest, str) else "")
    lines = [f"  ← {p.get('name')} {status}{shown} · E{ordinal}{receipt}"]
    if body is None:
        return lines
    text = evidence_text(body)
    head, offset = _clip(text)
    if head:
        lines.append(_indent(head.rstrip("\n"), "    | "))
    total = len(text.encode("utf-16-le", "surrogatepass")) // 2
    if offset < total:
        left = text[len(head) :].count("\n") + (0 if text.endswith("\n") else 1)
        lines.append(
            f"    … {left:,} more line{'s' if left != 1 else ''}:"
            f" comal evidence {short} E{ordinal} --offset {offset}"
        )
    return lines


@dataclass(slots=True)
class _Show:
    """How `show` prints: the session's short id, the flags, and the results seen so far."""

    short: str
    every: bool = False
    verbose: bool = False
    results: int = 0


def _entry_lines(entry: Entry, body: bytes | None, how: _Show) -> list[str]:
    """The lines `show` prints for one entry; every kind is decided here (`assert_never`).

    The payload is shown as recorded (a damaged field prints as it is stored)."""
    p = entry.payload
    verbose = how.verbose
    match kind_of(entry):
        case Kind.MESSAGE_USER:
            seq = f", seq {entry.seq}" if verbose else ""
            ask = f"▶ ask  ({_utc(entry.created_at)}{seq})"
            return ["", *_message_lines(p, ask, verbose=verbose)]
        case Kind.MESSAGE_ASSISTANT:
            extra = " · ".join(str(p[k]) for k in ("model", "finish") if p.get(k))
            who = "◀ answer" + (f"  ({extra})" if extra and verbose else "")
            return ["", *_message_lines(p, who, verbose=verbose)]
        case Kind.TOOL_STARTED:
            if not verbose:
                return []  # the answer that asked for the call shows it
            name = p.get("name")
            line = _call_line(str(name), p.get("arguments"), str(p.get("call_id")), verbose=True)
            return [f"  {line} (started)"]
        case Kind.TOOL_RESULT:
            how.results += 1
            return _result_lines(entry, body, ordinal=how.results, short=how.short, verbose=verbose)
        case Kind.PROJECTION:
            calls = p.get("call_ids")
            count = len(calls) if isinstance(calls, list) else 0
            outputs = "output" if count == 1 else "outputs"
            return [
                f"── context: {count} {outputs} replaced by references to make room"
                f" (~{p.get('before_tokens')} → ~{p.get('after_tokens')} tokens)"
            ]
        case Kind.CHECKPOINT:
            through = f"; covers through seq {p.get('covers_through_seq')}" if verbose else ""
            return [
                f"══ checkpoint {p.get('number')}: {p.get('title')}"
                f" (by {p.get('by', '?')}{through};"
                f" ~{p.get('before_tokens')} → ~{p.get('after_tokens')} tokens)",
                _indent(_shorten(str(p.get("text", "")))),
            ]
        case Kind.COMPACT_REQUESTED:
            return [f"── context: compaction requested (by {p.get('by', '?')})"]
        case Kind.COMPACT_CANCELLED:
            if p.get("reason") == "not_smaller":
                return [
                    "── context: compaction refused: it would not make the view smaller"
                    f" (~{p.get('before_tokens')} → ~{p.get('after_tokens')} tokens)"
                ]
            return [f"── context: queued compaction cancelled (by {p.get('by', '?')})"]
        case Kind.CONTEXT_CALIBRATED:
            if not verbose:
                return []
            return [f"── context: calibrated ratio {p.get('ratio')} ({p.get('source')})"]
        case Kind.WARNING | Kind.PROVIDER_ERROR:
            return [f"  ! {p.get('code')}: {p.get('message')}"]
        case Kind.SESSION_FINISHED:
            return [f"✓ finished: {_compact(p.get('answer'), 2000)}"]
        case (
            Kind.LOCK_ACQUIRED
            | Kind.LOCK_RECLAIMED
            | Kind.PROVIDER_REQUEST
            | Kind.PROVIDER_RESENT
            | Kind.SESSION_TOOLS
            | Kind.SESSION_STARTED
        ):
            # Bookkeeping a transcript leaves out (`--json` and `--all` keep every entry).
            if not how.every:
                return []
        case (
            Kind.SESSION_PLUGINS
            | Kind.MESSAGE_SUMMARY
            | Kind.RESPONSE_DISCARDED
            | Kind.PRESSURE_DEFERRED
            | Kind.BOARD_UPDATED
            | Kind.SESSION_CONFIGURED
            | Kind.SESSION_FORKED
            | Kind.SESSION_REWOUND
            | Kind.HOOK_RUN
            | Kind.USER_SHELL
            | Kind.SESSION_RESUMED
            | Kind.SESSION_MOVED
            | Kind.CHILD_RECEIPT
            | None  # a kind a newer Comal wrote
        ):
            pass
        case unknown:
            assert_never(unknown)
    return [f"  · {entry.kind} {_compact(p)}"]


def _entry_json(entry: Entry, body: bytes | None) -> JSONObject:
    return {
        "seq": entry.seq,
        "id": entry.id,
        "kind": entry.kind,
        "created_at": entry.created_at,
        "content_hash": entry.content_hash,
        "payload": entry.payload,
        "body_text": None if body is None else render_output_text(body),
    }


async def run_show(args: argparse.Namespace) -> int:
    """Print one session's transcript (asks, answers, tool calls, context events)."""
    with _open() as ledger:
        session_id = ledger.resolve(args.session)
        info = with_status(ledger, ledger.session(session_id))
        shown = shown_status(ledger, ledger.session(session_id))
        short = ledger.short_id(session_id)
        children = ledger.children(session_id)
        entries = ledger.entries(session_id)
        bodies = [ledger.body(entry) for entry in entries]
        asks = ledger.first_entries(Kind.MESSAGE_USER)
    title = info.title or first_ask(asks.get(session_id))
    if args.json:
        _emit_json(
            {
                "session": session_json(info, short, title),
                "children": list(children),
                "entries": [_entry_json(e, b) for e, b in zip(entries, bodies, strict=True)],
            }
        )
        return 0
    lines = [
        f"session {short} ({info.id}) · {shown} · model {info.model or '-'} · source {info.source}",
        f"cwd {info.cwd} · started {_utc(info.created_at)} · {info.entries} entries",
    ]
    if title:
        lines.append(f"title {title}")
    if info.parent_id:
        lines.append(f"parent {info.parent_id}")
    lines.extend(f"child {child}" for child in children)
    how = _Show(short, every=args.all, verbose=args.verbose)
    for entry, body in zip(entries, bodies, strict=True):
        lines.extend(_entry_lines(entry, body, how))
    _emit(_plain("\n".join(lines)) + "\n")
    return 0


# --- comal verify --------------------------------------------------------------------------


def _verify_report(target: str | Path, prefix: str | None) -> tuple[str, VerifyReport]:
    """The scope and report; read-only, so a damaged file is reported rather than refused."""
    if is_pg_url(target):
        with Ledger.open(target) as ledger:
            if prefix is None:
                return f"ledger {ledger.location}", ledger.verify()
            session_id = ledger.resolve(prefix)
            return f"session {session_id}", ledger.verify(session_id)
    path = sqlite_path(target)
    if not path.exists():
        Ledger.open(path).close()  # a ledger that was never written: create it, as others do
    if prefix is None:
        return f"ledger {path}", verify_file(path)
    session_id = resolve_in_file(path, prefix)
    return f"session {session_id}", verify_file(path, session_id)


def _salvage(source: str | Path, out: str, as_json: bool) -> int:
    if not is_pg_url(out) and sqlite_path(out).exists():
        raise LedgerError(f"{out} already exists; salvage writes a new ledger file")
    with Ledger.open(out) as target:
        copied = target.salvage_from(source)
        check = target.verify()
        shown = target.location
    body = {
        "source": redact(str(source)),
        "out": shown,
        "sessions": copied.sessions,
        "entries": copied.entries,
        "blobs": copied.blobs,
        "left_behind": list(copied.damaged),
        "out_verifies": check.ok,
    }
    if as_json:
        _emit_json(body)
    else:
        left = f"; left behind (damaged): {', '.join(copied.damaged)}" if copied.damaged else ""
        _emit(
            f"salvaged {copied.entries} intact entries, {copied.blobs} blobs and"
            f" {copied.sessions} sessions into {shown}{left}\n"
            f"{'ok' if check.ok else 'FAILED'}: {shown} verifies"
            f" ({check.entries} entries, {check.blobs} blobs)\n"
        )
    return 0 if check.ok else 3


async def run_verify(args: argparse.Namespace) -> int:
    """Re-hash one session (or the whole ledger); exit 3 (a ledger error) on any mismatch.

    With `--salvage OUT`, copy every intact entry into the new ledger OUT instead.
    """
    target = read_only_config().ledger
    if args.salvage is not None:
        return _salvage(target, args.salvage, args.json)
    scope, report = _verify_report(target, args.session)
    if args.json:
        _emit_json(
            {
                "ok": report.ok,
                "scope": scope,
                "entries": report.entries,
                "blobs": report.blobs,
                "damaged": list(report.damaged),
                "problems": list(report.problems),
            }
        )
    elif report.ok:
        _emit(f"ok: {scope}: {report.entries} entries and {report.blobs} blobs re-hashed\n")
    else:
        _emit("".join(f"{_plain(problem)}\n" for problem in report.problems))
        if report.damaged:
            _emit(f"damaged entries ({len(report.damaged)}): {', '.join(report.damaged)}\n")
        _emit(
            f"FAILED: {scope}: {len(report.problems)} problems; `comal verify --salvage OUT`"
            " copies every intact entry into a new ledger\n"
        )
    return 0 if report.ok else 3


def _positive(raw: str) -> int:
    if not raw.isdigit() or int(raw) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {raw!r}")
    return int(raw)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `sessions`, `show` and `verify` to the CLI."""
    sessions = subparsers.add_parser(
        "sessions",
        help="list this directory's sessions, latest activity first",
        description="List this directory's sessions, latest activity first: short id, age of the"
        " last activity, status (answered, running, finished, failed, interrupted), cwd, title."
        " In --json the status is the indexed one (`active` for answered and running).",
    )
    sessions.add_argument("--json", action="store_true", help="print a JSON array")
    sessions.add_argument(
        "--all", action="store_true", help="every directory's sessions, not only this one's"
    )
    sessions.add_argument(
        "--limit",
        type=_positive,
        metavar="N",
        help=f"the N latest, with their children (default {LISTED}; --json: all)",
    )
    sessions.add_argument(
        "--follow",
        action="store_true",
        help="then print each change as it happens (every host sharing the ledger)",
    )
    sessions.add_argument("--host", metavar="H", help="only sessions a process on host H ran")
    sessions.add_argument("--status", choices=SHOWN_STATUSES, help="only sessions with this status")
    sessions.add_argument(
        "--since",
        metavar="T",
        type=since_ms,
        help="only sessions active since T (30m, 2h, 1d, or an ISO date)",
    )
    sessions.set_defaults(func=run_sessions)

    show = subparsers.add_parser("show", help="print a session's transcript")
    show.add_argument("session", metavar="ID", help="short id, session id, or a unique prefix")
    show.add_argument("--json", action="store_true", help="print every entry, complete, as JSON")
    show.add_argument("--all", action="store_true", help="also show bookkeeping entries (locks…)")
    show.add_argument(
        "--verbose", action="store_true", help="also ids, receipts, sequence numbers, calibration"
    )
    show.set_defaults(func=run_show)

    verify = subparsers.add_parser("verify", help="re-hash the ledger's entries and blobs")
    verify.add_argument(
        "session", metavar="ID", nargs="?", help="only this session (default: everything)"
    )
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.add_argument(
        "--salvage",
        metavar="OUT",
        help="copy every intact entry into the new ledger OUT (a file, or a postgresql:// URL"
        " of an empty ledger), which then verifies",
    )
    verify.set_defaults(func=run_verify)
