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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from comal.agent.session_status import with_status
from comal.cli.configuring import read_only_config
from comal.cli.sessions_watch import follow, session_hosts, since_ms, wanted
from comal.errors import LedgerError
from comal.ids import now_ms
from comal.ledger import STATUSES, Entry, Ledger, SessionInfo, VerifyReport
from comal.ledger.engine import is_pg_url, redact, sqlite_path
from comal.ledger.records import UserMessage
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

PLAIN_OUTPUT_HEAD_CHARS = 1500
"""Plain `show` prints this much of a long tool output's start…"""
PLAIN_OUTPUT_TAIL_CHARS = 500
"""…and this much of its end."""
_PLAIN_PAYLOAD_CHARS = 300
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


def _first_ask(entry: Entry | None) -> str:
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


def _age(ms: int, now: int) -> str:
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


async def run_sessions(args: argparse.Namespace) -> int:
    """List every session, newest first (children under their coordinator): short id, age,
    status, cwd and title (first ask)."""
    if args.follow:
        with _open() as ledger:
            return await follow(ledger, args)
    with _open() as ledger:
        infos = [with_status(ledger, info) for info in ledger.sessions()]
        if args.host is not None or args.status is not None or args.since is not None:
            hosts = session_hosts(ledger)
            infos = [info for info in infos if wanted(info, hosts, args)]
        shorts = ledger.short_ids()
        asks = ledger.first_entries("message.user")
        path = ledger.location
    tree = session_tree(infos)
    titles = {info.id: info.title or _first_ask(asks.get(info.id)) for info in infos}
    if args.json:
        _emit_json(
            [session_json(i, shorts[i.id], titles[i.id]) | {"depth": depth} for depth, i in tree]
        )
        return 0
    if not infos:
        print(f"no sessions recorded in {path}", file=sys.stderr)
        return 0
    now = now_ms()
    header = ("ID", "AGE", "STATUS", "CWD", "TITLE")
    rows = [header] + [
        (
            ("   " * (depth - 1) + " └─ " if depth else "") + shorts[i.id],
            _age(i.last_activity_at, now),
            i.status,
            i.cwd,
            titles[i.id] or "-",
        )
        for depth, i in tree
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    _emit(_plain("\n".join(line.rstrip() for line in lines)) + "\n")
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


def _message_lines(payload: JSONObject, who: str) -> list[str]:
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
            args = _compact(part.arguments, 2000)
            lines.append(_indent(f"→ asks for {part.name} {args}  [{part.call_id}]"))
        elif isinstance(part, ToolResultPart):
            flag = " (error)" if part.is_error else ""
            lines.append(_indent(f"← {part.name}{flag}  [{part.call_id}]"))
            lines.append(_indent(_shorten(part.content), "    | "))
        else:
            lines.append(_indent(f"[media {part.media_type}]"))
    return lines


def _result_lines(entry: Entry, body: bytes | None) -> list[str]:
    p = entry.payload
    exit_code = p.get("exit_code")
    status = f"{p.get('status')}" + ("" if exit_code is None else f" · exit {exit_code}")
    size = p.get("size_bytes", len(body) if body is not None else None)
    shown = f" · {size:,} bytes" if isinstance(size, int) else ""
    digest = p.get("digest")
    receipt = f" · receipt {entry.id}" + (f" {digest}" if isinstance(digest, str) else "")
    lines = [f"  ← {p.get('name')} {status}{shown}{receipt}"]
    if body is not None:
        lines.append(_indent(_shorten(render_output_text(body)), "    | "))
    return lines


_QUIET_KINDS = frozenset(
    {
        "lock.acquired",
        "lock.reclaimed",
        "provider.request",
        "provider.resent",
        "session.tools",
        "session.started",
    }
)
"""Bookkeeping a transcript leaves out (`--json` and `--all` keep every entry)."""


def _entry_lines(entry: Entry, body: bytes | None, *, every: bool) -> list[str]:
    p = entry.payload
    kind = entry.kind
    if kind == "message.user":
        return ["", *_message_lines(p, f"▶ ask  ({_utc(entry.created_at)}, seq {entry.seq})")]
    if kind == "message.assistant":
        extra = " · ".join(str(p[k]) for k in ("model", "finish") if p.get(k))
        return ["", *_message_lines(p, "◀ answer" + (f"  ({extra})" if extra else ""))]
    if kind == "tool.started":
        args = _compact(p.get("arguments"), 2000)
        return [f"  → {p.get('name')} {args}  [{p.get('call_id')}]"]
    if kind == "tool.result":
        return _result_lines(entry, body)
    if kind == "projection":
        calls = p.get("call_ids")
        count = len(calls) if isinstance(calls, list) else 0
        return [
            f"── context: {count} results become references"
            f" ({p.get('reason')}; ~{p.get('before_tokens')} → ~{p.get('after_tokens')} tokens)"
        ]
    if kind == "checkpoint":
        return [
            f"══ checkpoint {p.get('number')}: {p.get('title')}"
            f" (by {p.get('by', '?')}; covers through seq {p.get('covers_through_seq')};"
            f" ~{p.get('before_tokens')} → ~{p.get('after_tokens')} tokens)",
            _indent(_shorten(str(p.get("text", "")))),
        ]
    if kind == "compact.requested":
        return [f"── context: compaction requested (by {p.get('by', '?')})"]
    if kind == "compact.cancelled":
        if p.get("reason") == "not_smaller":
            return [
                "── context: compaction refused: it would not make the view smaller"
                f" (~{p.get('before_tokens')} → ~{p.get('after_tokens')} tokens)"
            ]
        return [f"── context: queued compaction cancelled (by {p.get('by', '?')})"]
    if kind == "context.calibrated":
        return [f"── context: calibrated ratio {p.get('ratio')} ({p.get('source')})"]
    if kind in ("warning", "provider.error"):
        return [f"  ! {p.get('code')}: {p.get('message')}"]
    if kind == "session.finished":
        return [f"✓ finished: {_compact(p.get('answer'), 2000)}"]
    if kind in _QUIET_KINDS and not every:
        return []
    return [f"  · {kind} {_compact(p)}"]


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
        short = ledger.short_id(session_id)
        children = ledger.children(session_id)
        entries = ledger.entries(session_id)
        bodies = [ledger.body(entry) for entry in entries]
        asks = ledger.first_entries("message.user")
    title = info.title or _first_ask(asks.get(session_id))
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
        f"session {short} ({info.id}) · {info.status} · model {info.model or '-'}"
        f" · source {info.source}",
        f"cwd {info.cwd} · started {_utc(info.created_at)} · {info.entries} entries",
    ]
    if title:
        lines.append(f"title {title}")
    if info.parent_id:
        lines.append(f"parent {info.parent_id}")
    lines.extend(f"child {child}" for child in children)
    for entry, body in zip(entries, bodies, strict=True):
        lines.extend(_entry_lines(entry, body, every=args.all))
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


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `sessions`, `show` and `verify` to the CLI."""
    sessions = subparsers.add_parser(
        "sessions", help="list recorded sessions, newest first (short id, age, status, cwd, title)"
    )
    sessions.add_argument("--json", action="store_true", help="print a JSON array")
    sessions.add_argument(
        "--follow",
        action="store_true",
        help="then print each change as it happens (every host sharing the ledger)",
    )
    sessions.add_argument("--host", metavar="H", help="only sessions a process on host H ran")
    sessions.add_argument("--status", choices=STATUSES, help="only sessions with this status")
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
