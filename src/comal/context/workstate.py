"""The work state a checkpoint carries: board, files, commands, open errors, pending calls.

Read from ledger entries only (`board.updated`, `tool.started`, `tool.result`, assistant tool
calls) and kept small: each section is bounded and lists the newest items, each with the `evt_`
reference that reads its evidence exactly. Pure: same entries ⇒ same lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.conversation import ResultEntry, result_entry
from comal.context.rendering import evidence_text, salient_lines
from comal.context.view import BlobSource
from comal.ledger.entry import Entry
from comal.messages import JSONObject, JSONValue, canonical_json, message_from_json

MAX_FILES = 16
MAX_COMMANDS = 8
MAX_ERRORS = 5
MAX_PENDING = 8
PATH_KEYS = ("path", "file_path", "filename", "notebook_path")
COMMAND_KEYS = ("command", "cmd")


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call as known from the ledger (assistant message and/or `tool.started`)."""

    call_id: str
    name: str
    arguments: JSONObject
    started: Entry | None = None


@dataclass(frozen=True, slots=True)
class WorkState:
    """Lines of each work-state section, newest last."""

    board: tuple[str, ...]
    files: tuple[str, ...]
    commands: tuple[str, ...]
    errors: tuple[str, ...]
    pending: tuple[str, ...]


def clip(text: str, size: int) -> str:
    """`text` on one line, at most `size` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"


def _str(value: JSONValue) -> str | None:
    return value if isinstance(value, str) else None


def first_arg(arguments: JSONObject, keys: Sequence[str]) -> str | None:
    """The first string argument among `keys`."""
    for key in keys:
        value = _str(arguments.get(key))
        if value:
            return value
    return None


def describe_call(name: str, arguments: JSONObject, size: int = 100) -> str:
    """A short, exact-enough description: the main argument, else the JSON arguments."""
    main = first_arg(arguments, (*COMMAND_KEYS, *PATH_KEYS, "pattern", "ref", "query"))
    if main is not None:
        return f"{name} {clip(main, size)}"
    return f"{name} {clip(canonical_json(arguments), size)}"


def _prefix_key(entries: Sequence[Entry]) -> tuple[str, str, int]:
    """Identifies a session's entries up to a point: ids are unique and the ledger only grows,
    so the same first id, last id and length mean the same entries."""
    if not entries:
        return ("", "", 0)
    return (entries[0].id, entries[-1].id, len(entries))


_CALLS: dict[tuple[str, str, int], dict[str, Call]] = {}
_STATES: dict[tuple[tuple[str, str, int], int], WorkState] = {}


def collect_calls(entries: Sequence[Entry]) -> dict[str, Call]:
    """Calls by id (the latest call with an id wins; `tool.started` adds its receipt).

    Memoized for the last entries seen: a derivation reads the same calls several times.
    The result is shared: callers must not modify it."""
    key = _prefix_key(entries)
    hit = _CALLS.get(key)
    if hit is None:
        hit = _collect_calls(entries)
        _CALLS.clear()
        _CALLS[key] = hit
    return hit


def _collect_calls(entries: Sequence[Entry]) -> dict[str, Call]:
    calls: dict[str, Call] = {}
    for entry in entries:
        if entry.kind == "message.assistant":
            raw = entry.payload.get("message")
            if not isinstance(raw, dict):
                continue
            try:
                message = message_from_json(raw)
            except (ValueError, KeyError):
                continue
            for part in message.tool_calls:
                calls[part.call_id] = Call(part.call_id, part.name, part.arguments)
        elif entry.kind == "tool.started":
            call_id = _str(entry.payload.get("call_id")) or ""
            args = entry.payload.get("arguments")
            name = _str(entry.payload.get("name")) or "tool"
            calls[call_id] = Call(call_id, name, args if isinstance(args, dict) else {}, entry)
    return calls


def _file_op(name: str) -> str | None:
    lowered = name.lower()
    if "write" in lowered or "create" in lowered:
        return "written"
    if "edit" in lowered or "replace" in lowered or "patch" in lowered:
        return "edited"
    if "read" in lowered or lowered in ("view", "cat"):
        return "read"
    return None


def _file_line(call: Call, item: ResultEntry, op: str) -> str:
    digest = item.facts.digest
    prep = call.started.payload.get("preparation") if call.started is not None else None
    if op != "read" and isinstance(prep, dict):
        digest = _str(prep.get("digest_intended")) or digest
    state = (
        op
        if item.facts.status in ("ok", "postcondition_observed")
        else f"{op}? {item.facts.status}"
    )
    return f"{state} · {digest[:19]} · {item.facts.ref}"


def _error_line(item: ResultEntry, call: Call | None, blobs: BlobSource) -> str:
    what = describe_call(call.name, call.arguments, 80) if call else item.facts.name
    exit_note = f"exit {item.facts.exit_code}" if item.facts.exit_code is not None else "error"
    text = evidence_text(blobs.body(item.entry) or b"")
    lines = text.splitlines()
    marks = salient_lines(lines, set())
    detail = marks[-1][1] if marks else (lines[-1] if lines else "")
    return f"{what} → {exit_note} · {item.facts.ref}: {clip(detail, 160)}"


def _failed(item: ResultEntry) -> bool:
    return item.is_error or item.facts.exit_code not in (None, 0)


def work_state(entries: Sequence[Entry], blobs: BlobSource) -> WorkState:
    """The work state of a session from its entries (memoized for the last entries seen)."""
    key = (_prefix_key(entries), id(blobs))
    hit = _STATES.get(key)
    if hit is None:
        hit = _work_state(entries, blobs)
        _STATES.clear()
        _STATES[key] = hit
    return hit


def _work_state(entries: Sequence[Entry], blobs: BlobSource) -> WorkState:
    calls = collect_calls(entries)
    board: tuple[str, ...] = ()
    files: dict[str, tuple[int, str]] = {}
    commands: list[str] = []
    failures: dict[str, ResultEntry] = {}
    answered: set[str] = set()
    pending: list[str] = []
    for entry in entries:
        if entry.kind == "board.updated":
            board = _board_lines(entry.payload.get("criteria"))
        if entry.kind != "tool.result":
            continue
        item = result_entry(entry)
        answered.add(item.call_id)
        call = calls.get(item.call_id)
        name = call.name if call else item.facts.name
        args = call.arguments if call else {}
        path = first_arg(args, PATH_KEYS)
        op = _file_op(name)
        if path and op and call:
            files.pop(path, None)
            files[path] = (entry.seq, _file_line(call, item, op))
        command = first_arg(args, COMMAND_KEYS)
        if command is not None:
            status = (
                f"exit {item.facts.exit_code}"
                if item.facts.exit_code is not None
                else item.facts.status
            )
            commands.append(f"$ {clip(command, 120)} → {status} · {item.facts.ref}")
        key = f"{name} {canonical_json(args)}"
        if _failed(item):
            failures.pop(key, None)
            failures[key] = item
        else:
            failures.pop(key, None)
        if item.facts.status == "uncertain":
            pending.append(f"{describe_call(name, args)} · {item.facts.ref}: uncertain, not re-run")
    for call in calls.values():
        if call.started is not None and call.call_id not in answered:
            pending.append(
                f"{describe_call(call.name, call.arguments)}: started, no result recorded"
            )
    open_errors = list(failures.values())[-MAX_ERRORS:]
    errors = [_error_line(item, calls.get(item.call_id), blobs) for item in open_errors]
    file_lines = [f"{path}: {line}" for path, (_, line) in files.items()]
    return WorkState(
        board=board,
        files=tuple(file_lines[-MAX_FILES:]),
        commands=tuple(commands[-MAX_COMMANDS:]),
        errors=tuple(errors[-MAX_ERRORS:]),
        pending=tuple(pending[-MAX_PENDING:]),
    )


def _board_lines(criteria: JSONValue) -> tuple[str, ...]:
    if not isinstance(criteria, list):
        return ()
    lines = []
    for item in criteria:
        if not isinstance(item, dict):
            continue
        status = _str(item.get("status")) or "?"
        ident = _str(item.get("id")) or ""
        text = clip(_str(item.get("text")) or "", 200)
        check = _str(item.get("check"))
        suffix = f" (check: {clip(check, 80)})" if check else ""
        lines.append(f"[{status}] {ident}: {text}{suffix}")
    return tuple(lines)


def without_refs(state: WorkState, refs: set[str]) -> WorkState:
    """`state` without the file, command and error lines of results in `refs`.

    The checkpoint passes the results its verbatim tail shows: those lines would only repeat
    what the tail says. Board and pending calls stay (no tail result stands for them).
    """

    def keep(lines: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(line for line in lines if not any(ref in line for ref in refs))

    files, commands, errors = keep(state.files), keep(state.commands), keep(state.errors)
    return WorkState(state.board, files, commands, errors, state.pending)
