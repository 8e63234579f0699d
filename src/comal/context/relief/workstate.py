"""The work state a checkpoint carries: board, files, commands, open errors, pending calls.

Read from ledger entries only (`board.updated`, `tool.started`, `tool.result`, assistant tool
calls) and kept small: each section is bounded and lists the newest items, each with the `evt_`
reference that reads its evidence exactly. Each result is read against the call it answers by
the rule of `session.pairing` (the view's), so a checkpoint names the calls the
conversation it replaces showed. Pure: same entries ⇒ same lines.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from comal.context.view.build import BlobSource
from comal.context.view.conversation import ConversationIndex, ResultEntry, result_entry
from comal.context.view.rendering import evidence_text, salient_lines
from comal.ledger.entry import Entry
from comal.ledger.records import BoardUpdated, Kind, ToolStartedRecord
from comal.ledger.records import fields as f
from comal.messages import JSONObject, canonical_json
from comal.session import CallSite, Pairing
from comal.values import value

MAX_FILES = 16
MAX_COMMANDS = 8
MAX_ERRORS = 5
MAX_PENDING = 8
PATH_KEYS = ("path", "file_path", "filename", "notebook_path")
COMMAND_KEYS = ("command", "cmd")


@value
class Call:
    """A tool call as known from the ledger (assistant message and/or `tool.started`); one is
    made for every result a derivation reads, so it is a `@value`."""

    call_id: str
    name: str
    arguments: JSONObject
    started: Entry | None = None
    path: str | None = field(init=False)
    """The file it works on (its first `PATH_KEYS` argument), read once when it is made."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", first_arg(self.arguments, PATH_KEYS))


@value
class StateLine:
    """One line of a work-state section, and the `tool.result` it names, if any.

    The line names its result by the session's ordinal (`E17`: the 17th `tool.result`, which
    `EvidenceRead` takes as `ref` like the full id, for a ninth of its tokens); `ref` keeps the
    result's entry id, so a checkpoint can tell which outputs the line names without reading
    its text."""

    text: str
    ref: str | None = None


@dataclass(frozen=True, slots=True)
class WorkState:
    """Lines of each work-state section, newest last."""

    board: tuple[str, ...]
    files: tuple[StateLine, ...]
    commands: tuple[StateLine, ...]
    errors: tuple[StateLine, ...]
    pending: tuple[StateLine, ...]

    @property
    def refs(self) -> frozenset[str]:
        """Entry ids of the results the lines name."""
        lines = (*self.files, *self.commands, *self.errors, *self.pending)
        return frozenset(line.ref for line in lines if line.ref is not None)


def ordinal_ref(ordinal: int) -> str:
    """`E17` for ordinal 17: the session's 17th `tool.result`, as checkpoints name it."""
    return f"E{ordinal}"


def clip(text: str, size: int) -> str:
    """`text` on one line, at most `size` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"


def first_arg(arguments: JSONObject, keys: Sequence[str]) -> str | None:
    """The first non-empty string argument among `keys`."""
    for key in keys:
        value = f.text_or_none(arguments, key)
        if value:
            return value
    return None


_MAIN_KEYS = (*COMMAND_KEYS, *PATH_KEYS, "pattern", "ref", "query")
"""The argument that says what a call does, in order of preference."""


def describe_call(name: str, arguments: JSONObject, size: int = 100) -> str:
    """A short, exact-enough description: the main argument, else the JSON arguments."""
    main = first_arg(arguments, _MAIN_KEYS)
    if main is not None:
        return f"{name} {clip(main, size)}"
    return f"{name} {clip(canonical_json(arguments), size)}"


def prefix_key(entries: Sequence[Entry]) -> tuple[str, str, int]:
    """Identifies a session's entries up to a point: ids are unique and the ledger only grows,
    so the same first id, last id and length mean the same entries."""
    if not entries:
        return ("", "", 0)
    return (entries[0].id, entries[-1].id, len(entries))


_STATES: dict[tuple[tuple[str, str, int], int], WorkState] = {}


def is_prefix(key: tuple[str, str, int], entries: Sequence[Entry]) -> bool:
    """Whether `key` (`prefix_key`) names the first entries of `entries`."""
    first, last, count = key
    return 0 < count <= len(entries) and entries[0].id == first and entries[count - 1].id == last


def collect_calls(
    entries: Sequence[Entry], index: ConversationIndex | None = None
) -> dict[str, Call]:
    """The call each result answers, by the result's entry id (paired by `pairing`; orphaned
    results have none). A call's `tool.started` receipt gives its name and arguments.

    Memoized for the last entries seen (a derivation reads the same calls several times) and
    extended from there when the session grew; `index`, a conversation index that has taken
    exactly `entries`, lends its pairing and results instead of reading them again. The result
    is shared: callers must not modify it."""
    return _fold(entries, index).calls


def _call(site: CallSite) -> Call:
    name, arguments = site.ran()
    return Call(site.call.call_id, name, arguments, site.started)


@dataclass(slots=True)
class _Fold:
    """The work state's running parts after the first `key[2]` entries of a session.

    Each result is read against the call it answers; a fold is extended by newer entries
    while they change no earlier pairing (`Pairing.take`), otherwise it is read again from
    the start. It keeps what each line needs, not the line: a section shows only its newest
    few, so only those are written (`_work_state`).
    """

    key: tuple[str, str, int]
    pairing: Pairing = field(default_factory=Pairing)
    calls: dict[str, Call] = field(default_factory=dict)
    board: tuple[str, ...] = ()
    files: dict[str, tuple[Call, ResultEntry, str, int]] = field(default_factory=dict)
    """Per path, the newest call on it with its result, operation and ordinal."""
    commands: deque[tuple[str, ResultEntry, int]] = field(
        default_factory=lambda: deque(maxlen=MAX_COMMANDS)
    )
    """The newest commands only (no section shows more), with their results and ordinals."""
    failures: dict[str, tuple[ResultEntry, int]] = field(default_factory=dict)
    """Open failures by call (name and arguments), each with its ordinal."""
    uncertain: list[StateLine] = field(default_factory=list)
    results: int = 0
    """`tool.result` entries folded so far: the ordinal of the newest (`E17`)."""

    def copy(self, key: tuple[str, str, int]) -> _Fold:
        """A fold with the same parts (copied: the memoized one stays as it was)."""
        return _Fold(
            key,
            self.pairing.copy(),
            dict(self.calls),
            self.board,
            dict(self.files),
            self.commands.copy(),
            dict(self.failures),
            list(self.uncertain),
            self.results,
        )

    def take(self, entries: Sequence[Entry], index: ConversationIndex | None = None) -> None:
        """Fold in `entries` (already in `pairing`); `index` lends the results it read."""
        read = result_entry if index is None else index.result_of
        for entry in entries:
            if entry.kind == Kind.BOARD_UPDATED:
                self.board = _board_lines(BoardUpdated.from_entry(entry).criteria)
            if entry.kind != Kind.TOOL_RESULT:
                continue
            self.results += 1
            ordinal = self.results
            item = read(entry)
            site = self.pairing.site_of(entry)
            call = _call(site) if site is not None else None
            if call is not None:
                self.calls[entry.id] = call
            name = call.name if call else item.facts.name
            args = call.arguments if call else {}
            if call is not None and call.path:
                op = _file_op(name)
                if op is not None:
                    self.files.pop(call.path, None)
                    self.files[call.path] = (call, item, op, ordinal)
            command = first_arg(args, COMMAND_KEYS)
            if command is not None:
                self.commands.append((command, item, ordinal))
            key = f"{name} {canonical_json(args)}"
            self.failures.pop(key, None)
            if _failed(item):
                self.failures[key] = (item, ordinal)
            if item.facts.status == "uncertain":
                text = (
                    f"{describe_call(name, args)} · {ordinal_ref(ordinal)}: uncertain, not re-run"
                )
                self.uncertain.append(StateLine(text, entry.id))


_FOLDS: list[_Fold] = []
"""The last fold made (one: a process works on one session's derivations at a time)."""


def _fold(entries: Sequence[Entry], index: ConversationIndex | None = None) -> _Fold:
    key = prefix_key(entries)
    last = _FOLDS[0] if _FOLDS else None
    if last is not None and last.key == key:
        return last
    fold: _Fold | None = None
    if last is not None and is_prefix(last.key, entries):
        newer = entries[last.key[2] :]
        fold = last.copy(key)
        if fold.pairing.extend(newer):
            fold = None  # an earlier pairing changed: read from the start
        else:
            fold.take(newer)
    if fold is None:
        # A resumed session's first derivation: the view has just paired every entry.
        lent = None if index is None else index.pairing_of(entries)
        fold = _Fold(key, Pairing() if lent is None else lent.copy())
        if lent is None:
            fold.pairing.extend(entries)
        fold.take(entries, None if lent is None else index)
    _FOLDS[:] = [fold]
    return fold


def _file_op(name: str) -> str | None:
    lowered = name.lower()
    if "write" in lowered or "create" in lowered:
        return "written"
    if "edit" in lowered or "replace" in lowered or "patch" in lowered:
        return "edited"
    if "read" in lowered or lowered in ("view", "cat"):
        return "read"
    return None


def _file_line(path: str, call: Call, item: ResultEntry, op: str, ordinal: int) -> StateLine:
    digest = item.facts.digest
    prep = (
        ToolStartedRecord.from_entry(call.started).preparation if call.started is not None else None
    )
    if op != "read" and prep is not None:
        digest = prep.digest_intended or digest
    state = (
        op
        if item.facts.status in ("ok", "postcondition_observed")
        else f"{op}? {item.facts.status}"
    )
    text = f"{path}: {state} · {digest[:19]} · {ordinal_ref(ordinal)}"
    return StateLine(text, item.entry.id)


def _command_line(command: str, item: ResultEntry, ordinal: int) -> StateLine:
    facts = item.facts
    status = f"exit {facts.exit_code}" if facts.exit_code is not None else facts.status
    text = f"$ {clip(command, 120)} → {status} · {ordinal_ref(ordinal)}"
    return StateLine(text, item.entry.id)


def _error_line(item: ResultEntry, ordinal: int, call: Call | None, blobs: BlobSource) -> StateLine:
    what = describe_call(call.name, call.arguments, 80) if call else item.facts.name
    exit_note = f"exit {item.facts.exit_code}" if item.facts.exit_code is not None else "error"
    text = evidence_text(blobs.body(item.entry) or b"")
    lines = text.splitlines()
    marks = salient_lines(lines, set())
    detail = marks[-1][1] if marks else (lines[-1] if lines else "")
    text = f"{what} → {exit_note} · {ordinal_ref(ordinal)}: {clip(detail, 160)}"
    return StateLine(text, item.entry.id)


def _failed(item: ResultEntry) -> bool:
    return item.is_error or item.facts.exit_code not in (None, 0)


def work_state(
    entries: Sequence[Entry], blobs: BlobSource, index: ConversationIndex | None = None
) -> WorkState:
    """The work state of a session from its entries (memoized for the last entries seen;
    `index` as for `collect_calls`)."""
    key = (prefix_key(entries), id(blobs))
    hit = _STATES.get(key)
    if hit is None:
        hit = _work_state(entries, blobs, index)
        _STATES.clear()
        _STATES[key] = hit
    return hit


def _work_state(
    entries: Sequence[Entry], blobs: BlobSource, index: ConversationIndex | None
) -> WorkState:
    fold = _fold(entries, index)
    pending = list(fold.uncertain)
    for site in fold.pairing.sites:
        if site.started is not None and site.result is None:
            what = describe_call(site.name, site.arguments)
            pending.append(StateLine(f"{what}: started, no result recorded"))
    open_errors = list(fold.failures.values())[-MAX_ERRORS:]
    errors = [
        _error_line(item, ordinal, fold.calls.get(item.entry.id), blobs)
        for item, ordinal in open_errors
    ]
    files = list(fold.files.items())[-MAX_FILES:]
    return WorkState(
        board=fold.board,
        files=tuple(_file_line(path, *facts) for path, facts in files),
        commands=tuple(_command_line(*facts) for facts in fold.commands),
        errors=tuple(errors),
        pending=tuple(pending[-MAX_PENDING:]),
    )


def _board_lines(criteria: tuple[JSONObject, ...]) -> tuple[str, ...]:
    lines = []
    for item in criteria:
        status = f.text(item, "status") or "?"
        ident = f.text(item, "id")
        text = clip(f.text(item, "text"), 200)
        check = f.text_or_none(item, "check")
        suffix = f" (check: {clip(check, 80)})" if check else ""
        lines.append(f"[{status}] {ident}: {text}{suffix}")
    return tuple(lines)


def without_refs(state: WorkState, refs: set[str]) -> WorkState:
    """`state` without the file, command and error lines of results in `refs` (entry ids).

    The checkpoint passes the results its verbatim tail shows: those lines would only repeat
    what the tail says. Board and pending calls stay (no tail result stands for them).
    """

    def keep(lines: tuple[StateLine, ...]) -> tuple[StateLine, ...]:
        return tuple(line for line in lines if line.ref not in refs)

    files, commands, errors = keep(state.files), keep(state.commands), keep(state.errors)
    return WorkState(state.board, files, commands, errors, state.pending)
