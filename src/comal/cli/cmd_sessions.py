"""`comal sessions`, `comal show UUID` and `comal verify [UUID]`: read-only views of the ledger.

Data goes to stdout, in plain text or (`--json`) as one JSON document; errors go to stderr
through the ComalError handler in `cli.main`. Session ids may be given as unique prefixes.
Output is written as UTF-8 with lone surrogates (kept exactly in the ledger) escaped as
`\\udcXX`, which is also what a JSON parser reads back into the original string.
Plain mode shortens long tool outputs; `--json` always carries every byte as text.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from comal.config import load_config
from comal.ledger import Entry, Ledger, SessionInfo
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
    return Ledger.open(load_config().ledger_path)


def session_json(info: SessionInfo) -> JSONObject:
    """The JSON form of a session row (`comal sessions --json`, exports)."""
    return {
        "id": info.id,
        "parent_id": info.parent_id,
        "started_at": info.created_at,
        "started": _utc(info.created_at),
        "cwd": info.cwd,
        "model": info.model,
        "status": info.status,
        "title": info.title,
        "source": info.source,
        "entries": info.entries,
        "last_activity_at": info.last_activity_at,
        "last_activity": _utc(info.last_activity_at),
        "fork_of": info.fork_of,
        "fork_seq": info.fork_seq,
    }


def fork_tree(infos: list[SessionInfo]) -> list[tuple[int, SessionInfo]]:
    """(depth, session) in display order: each fork right under its parent, oldest first."""
    known = {info.id for info in infos}
    forks: dict[str, list[SessionInfo]] = {}
    for info in infos:
        if info.fork_of in known:
            forks.setdefault(str(info.fork_of), []).append(info)
    ordered: list[tuple[int, SessionInfo]] = []

    def visit(info: SessionInfo, depth: int) -> None:
        ordered.append((depth, info))
        for fork in sorted(forks.get(info.id, []), key=lambda f: f.created_at):
            visit(fork, depth + 1)

    for info in infos:
        if info.fork_of not in known:
            visit(info, 0)
    return ordered


# --- comal sessions ------------------------------------------------------------------------


async def run_sessions(args: argparse.Namespace) -> int:
    """List every session, newest first."""
    with _open() as ledger:
        infos = ledger.sessions()
        path = ledger.path
    if args.json:
        _emit_json([session_json(info) for info in infos])
        return 0
    if not infos:
        print(f"no sessions recorded in {path}", file=sys.stderr)
        return 0
    header = ("ID", "STARTED", "CWD", "MODEL", "STATUS", "ENTRIES", "LAST ACTIVITY")
    rows = [header] + [
        (
            ("  " * (depth - 1) + "└ " if depth else "") + info.id,
            _utc(info.created_at),
            info.cwd,
            info.model or "-",
            info.status,
            str(info.entries),
            _utc(info.last_activity_at),
        )
        for depth, info in fork_tree(infos)
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


def _message_lines(payload: JSONObject) -> list[str]:
    raw = payload.get("message")
    if not isinstance(raw, dict):
        return [_indent(_compact(payload))]
    try:
        message = message_from_json(raw)
    except (ValueError, KeyError) as exc:
        return [_indent(f"[unreadable message: {exc}]")]
    lines: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(_indent(part.text))
        elif isinstance(part, ReasoningPart):
            lines.append(_indent(f"[reasoning · {len(part.text):,} chars · {part.wire}]"))
        elif isinstance(part, ToolCallPart):
            args = _compact(part.arguments, 2000)
            lines.append(_indent(f"→ call {part.name} [{part.call_id}] {args}"))
        elif isinstance(part, ToolResultPart):
            flag = " (error)" if part.is_error else ""
            lines.append(_indent(f"← result {part.name} [{part.call_id}]{flag}"))
            lines.append(_indent(_shorten(part.content), "    | "))
        else:
            lines.append(_indent(f"[media {part.media_type}]"))
    return lines


def _entry_lines(entry: Entry, body: bytes | None) -> list[str]:
    p = entry.payload
    head = f"[{entry.seq}] {_utc(entry.created_at)} "
    kind = entry.kind
    if kind == "message.user":
        return [head + "user", *_message_lines(p)]
    if kind == "message.assistant":
        extra = " · ".join(str(p[k]) for k in ("model", "finish") if p.get(k))
        return [head + "assistant" + (f" ({extra})" if extra else ""), *_message_lines(p)]
    if kind == "tool.started":
        args = _compact(p.get("arguments"), 2000)
        return [head + f"tool.started {p.get('name')} [{p.get('call_id')}] {args}"]
    if kind == "tool.result":
        exit_code = p.get("exit_code")
        status = f"{p.get('status')}" + ("" if exit_code is None else f" · exit {exit_code}")
        size = f" · {len(body):,} bytes" if body is not None else ""
        lines = [head + f"tool.result {p.get('name')} [{p.get('call_id')}] {status}{size}"]
        if body is not None:
            lines.append(_indent(_shorten(render_output_text(body)), "    | "))
        return lines
    if kind == "projection":
        calls = p.get("call_ids")
        count = len(calls) if isinstance(calls, list) else 0
        return [
            head + f"── projection: {count} results become references"
            f" ({p.get('reason')}; {p.get('before_tokens')} → {p.get('after_tokens')} tokens)"
        ]
    if kind == "checkpoint":
        return [
            head + f"══ checkpoint {p.get('number')}: {p.get('title')}"
            f" (covers through seq {p.get('covers_through_seq')};"
            f" {p.get('before_tokens')} → {p.get('after_tokens')} tokens)",
            _indent(_shorten(str(p.get("text", "")))),
        ]
    return [head + f"{kind} {_compact(p)}"]


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
    """Print one session's transcript."""
    with _open() as ledger:
        session_id = ledger.resolve(args.session)
        info = ledger.session(session_id)
        children = ledger.children(session_id)
        entries = ledger.entries(session_id)
        bodies = [ledger.body(entry) for entry in entries]
    if args.json:
        _emit_json(
            {
                "session": session_json(info),
                "children": list(children),
                "entries": [_entry_json(e, b) for e, b in zip(entries, bodies, strict=True)],
            }
        )
        return 0
    lines = [
        f"session {info.id}  {info.status}  model {info.model or '-'}  source {info.source}",
        f"cwd {info.cwd}  started {_utc(info.created_at)}  entries {info.entries}",
    ]
    if info.title:
        lines.append(f"title {info.title}")
    if info.parent_id:
        lines.append(f"parent {info.parent_id}")
    lines.extend(f"child {child}" for child in children)
    lines.append("")
    for entry, body in zip(entries, bodies, strict=True):
        lines.extend(_entry_lines(entry, body))
    _emit(_plain("\n".join(lines)) + "\n")
    return 0


# --- comal verify --------------------------------------------------------------------------


async def run_verify(args: argparse.Namespace) -> int:
    """Re-hash one session (or the whole ledger); exit 1 when anything does not match."""
    with _open() as ledger:
        session_id = None if args.session is None else ledger.resolve(args.session)
        report = ledger.verify(session_id)
        path = ledger.path
    scope = f"session {session_id}" if session_id else f"ledger {path}"
    if args.json:
        _emit_json(
            {
                "ok": report.ok,
                "scope": scope,
                "entries": report.entries,
                "blobs": report.blobs,
                "problems": list(report.problems),
            }
        )
    elif report.ok:
        _emit(f"ok: {scope}: {report.entries} entries and {report.blobs} blobs re-hashed\n")
    else:
        _emit("".join(f"{_plain(problem)}\n" for problem in report.problems))
        _emit(f"FAILED: {scope}: {len(report.problems)} problems\n")
    return 0 if report.ok else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `sessions`, `show` and `verify` to the CLI."""
    sessions = subparsers.add_parser("sessions", help="list recorded sessions, newest first")
    sessions.add_argument("--json", action="store_true", help="print a JSON array")
    sessions.set_defaults(func=run_sessions)

    show = subparsers.add_parser("show", help="print a session's transcript")
    show.add_argument("session", metavar="UUID", help="session id or unique prefix")
    show.add_argument("--json", action="store_true", help="print every entry, complete, as JSON")
    show.set_defaults(func=run_show)

    verify = subparsers.add_parser("verify", help="re-hash the ledger's entries and blobs")
    verify.add_argument(
        "session", metavar="UUID", nargs="?", help="only this session (default: everything)"
    )
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.set_defaults(func=run_verify)
