"""A parsed peer session as planned ledger entries, before anything is written.

Every importer turns a file into a `ParsedSession`: the exact entries (kind, payload, body
bytes) an ordinary Comal session would hold, in order, plus its child sessions. Nothing touches
the ledger while parsing, so a malformed file fails before any write ("nothing half-imported"),
and the replay benchmark can read the same plan without a ledger.

Invariants kept by `SessionPlan` (the builder every importer uses):
- every tool call gets exactly one `tool.result`, placed right after its assistant turn's
  results; a call with no recorded result is closed with status `uncertain` and an explicit
  interrupted text, never left an orphan — except a call of the last turn whose work the peer
  recorded elsewhere (a sub-agent's own transcript) while the file ends before its result: it
  keeps a `tool.started` receipt and no result, as a Comal call interrupted mid-run (`done`);
- a result whose call is unknown is a format error, not silently dropped;
- call ids are unique within a session: a recorded id used again (replayed demonstrations do
  this) becomes `<id>#<n>`, and its result follows it;
- usage is normalized to `comal.usage.Usage` JSON and the recorded usage is kept as `usage_raw`.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from comal.errors import ImportFormatError
from comal.ledger.records import (
    AssistantMessage,
    ImportOrigin,
    Record,
    RecordedPermission,
    RecordedWindow,
    SessionFinished,
    SessionStarted,
    SummaryMessage,
    ToolResult,
    ToolStartedRecord,
    UserMessage,
    WarningRecord,
)
from comal.messages import (
    JSONObject,
    JSONValue,
    MediaPart,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    message_to_json,
)
from comal.usage import Usage

INTERRUPTED_TEXT = "[interrupted: the recorded session holds no result for this call]"
"""Body of the synthetic result given to a call the peer never answered."""

IMPORTED_MODE = "imported"
"""Permission `mode` of the `tool.started` receipt of a call left running (`SessionPlan.done`):
the peer allowed and started it; this process's policy decides everything done from now on."""

TEXT_ACTION_PREFIX = "text_action_"
"""Call ids of *text actions*: commands the agent wrote inside its assistant text (mini-swe-agent
v1, SWE-agent) and the importer made structured calls. The agent sent the text alone, and the
observation as a user message; renderings that reproduce what was sent (the replay) show the
call through its text only and the result as a user message (`is_text_action`)."""


def text_action_id(agent: str, index: int) -> str:
    """The stable synthetic id of the text action in message `index` of an `agent` recording."""
    return f"{TEXT_ACTION_PREFIX}{agent}_{index}"


def is_text_action(call_id: str) -> bool:
    """Whether a call (or its result) is a text action (see `TEXT_ACTION_PREFIX`)."""
    return call_id.startswith(TEXT_ACTION_PREFIX)


def recorded_ms(value: object) -> int | None:
    """A recorded timestamp as Unix milliseconds: ISO 8601 text (`2025-07-17T20:42:59.346Z`,
    with or without an offset; none is read as UTC) or a number of seconds; None when absent or
    unreadable (time is a measurement the replay uses when present, never required)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return round(value * 1000) if math.isfinite(value) else None
    if not isinstance(value, str) or not value:
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return round(stamp.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class PlannedEntry:
    """One ledger entry to append: its record and optional exact body bytes."""

    record: Record
    body: bytes | None = None
    media: tuple[tuple[str, bytes], ...] = ()
    """Media of a `tool.result` as (media type, bytes); written as blobs under `media`."""
    at_ms: int | None = None
    """When the peer recorded it (Unix ms), if its format keeps time: the replay reads the
    idle gaps between model calls from it (a prompt cache expires while idle)."""

    @property
    def kind(self) -> str:
        """The entry kind."""
        return self.record.KIND

    @property
    def payload(self) -> JSONObject:
        """The payload the entry is written with."""
        return self.record.to_payload()


@dataclass(frozen=True, slots=True)
class ParsedSession:
    """A peer session ready to be written as a Comal session (children are sub-agents)."""

    format: str
    """Importer name, e.g. `claude-code`; the session source is `import:<format>`."""
    path: str
    label: str
    """Short human name: file stem, plus `#sidechain-N` for children."""
    title: str
    cwd: str
    model: str
    system: str
    """The recorded system prompt ("" when the peer did not record it)."""
    entries: tuple[PlannedEntry, ...]
    """Entries after `session.started`, in order."""
    children: tuple[ParsedSession, ...] = ()
    origin_id: str | None = None
    parent_call_id: str | None = None
    """For a sub-agent: the parent's call (e.g. Claude Code's `Task`) that ran it."""
    compaction: bool = False
    """The peer's own compaction call recorded as a conversation (not replayed)."""
    file_digest: str = ""
    """sha256 of the recorded file (re-imports are matched by it)."""
    file_index: int = 0
    """Which session of the file this is (files such as Aider's hold several)."""

    @property
    def source(self) -> str:
        """The ledger `source` of the session."""
        return f"import:{self.format}"

    def started_record(self) -> SessionStarted:
        """The `session.started` record of the imported session."""
        return SessionStarted(
            cwd=self.cwd,
            provider="",
            wire="",
            model=self.model,
            window=RecordedWindow(None, "unknown"),
            source=self.source,
            system=self.system,
            origin=ImportOrigin(
                self.path,
                self.label,
                self.origin_id,
                self.file_digest,
                self.file_index,
                self.parent_call_id,
                self.compaction,
            ),
        )


def format_error(path: Path | str, line: int | None, reason: str) -> ImportFormatError:
    """An `ImportFormatError` naming the file and (when known) the line."""
    where = f"{path}:{line}" if line is not None else str(path)
    return ImportFormatError(f"{where}: {reason}")


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of a JSONL file as (line number, object).

    Raises:
        ImportFormatError: unreadable file, a line that is not JSON or not an object.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise format_error(path, None, f"cannot read: {exc}") from exc
    records: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        for value in _line_values(path, number, line):
            if not isinstance(value, dict):
                raise format_error(path, number, "a record must be a JSON object")
            records.append((number, value))
    return records


_DECODER = json.JSONDecoder()


def _line_values(path: Path, number: int, line: str) -> list[Any]:
    """The JSON values of one line: usually one, but a writer that lost a newline leaves two
    records on one line (`{…}{…}`: Claude Code 2.x does), each read in order.

    Raises:
        ImportFormatError: the line is not JSON, or holds something after its values.
    """
    try:
        return [json.loads(line)]
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise format_error(path, number, f"not JSON ({exc.msg})") from exc
    values: list[Any] = []
    at = len(line) - len(line.lstrip())
    while at < len(line):
        try:
            value, end = _DECODER.raw_decode(line, at)
        except json.JSONDecodeError as exc:
            raise format_error(path, number, f"not JSON ({exc.msg})") from exc
        values.append(value)
        at = end + len(line[end:]) - len(line[end:].lstrip())
    return values


def read_json(path: Path) -> dict[str, Any]:
    """A whole-file JSON object.

    Raises:
        ImportFormatError: unreadable, not JSON (names the line), or not an object.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise format_error(path, None, f"cannot read: {exc}") from exc
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise format_error(path, exc.lineno, f"not JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise format_error(path, 1, "the document must be a JSON object")
    return value


def _int(obj: object, *keys: str) -> int | None:
    node = obj
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node if isinstance(node, int) and not isinstance(node, bool) else None


def usage_openai_chat(raw: object) -> Usage:
    """Chat-completions usage: `prompt_tokens` includes cached tokens, output includes reasoning."""
    total = _int(raw, "prompt_tokens")
    cached = _int(raw, "prompt_tokens_details", "cached_tokens")
    return Usage(
        new_input=None if total is None else total - (cached or 0),
        cache_read=cached,
        cache_write=None,
        output=_int(raw, "completion_tokens"),
        reasoning=_int(raw, "completion_tokens_details", "reasoning_tokens"),
    )


def usage_anthropic(raw: object) -> Usage:
    """Anthropic usage: `input_tokens` excludes cache reads and writes."""
    return Usage(
        new_input=_int(raw, "input_tokens"),
        cache_read=_int(raw, "cache_read_input_tokens"),
        cache_write=_int(raw, "cache_creation_input_tokens"),
        output=_int(raw, "output_tokens"),
        reasoning=None,
    )


def usage_codex(raw: object) -> Usage:
    """Codex `token_count` usage: `input_tokens` includes `cached_input_tokens`."""
    total = _int(raw, "input_tokens")
    cached = _int(raw, "cached_input_tokens")
    return Usage(
        new_input=None if total is None else total - (cached or 0),
        cache_read=cached,
        cache_write=None,
        output=_int(raw, "output_tokens"),
        reasoning=_int(raw, "reasoning_output_tokens"),
    )


def as_json(value: object) -> JSONValue:
    """A recorded JSON value, checked to be plain JSON (it came from `json.loads`)."""
    return json.loads(json.dumps(value))  # type: ignore[no-any-return]


@dataclass(slots=True)
class _Pending:
    call: ToolCallPart
    answered: bool = False


@dataclass(slots=True)
class SessionPlan:
    """Builds the entries of one session in order, keeping call/result pairing exact."""

    path: Path
    wire: str
    entries: list[PlannedEntry] = field(default_factory=list)
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _used_ids: set[str] = field(default_factory=set)
    _calls: int = 0
    at_ms: int | None = None
    """The recorded time of the record being read (set by the importer, `None` when the
    format keeps none): every entry planned from it carries it."""

    @property
    def calls(self) -> int:
        """Model calls (assistant messages) planned so far."""
        return self._calls

    def _add(self, entry: PlannedEntry) -> None:
        self.entries.append(entry if self.at_ms is None else replace(entry, at_ms=self.at_ms))

    def _close_pending(self) -> None:
        """Give every unanswered call of the last assistant turn an explicit uncertain result."""
        for pending in self._pending.values():
            if not pending.answered:
                self._result_entry(
                    pending.call, INTERRUPTED_TEXT.encode(), status="uncertain", is_error=True
                )
        self._pending.clear()

    def user(self, parts: tuple[Part, ...]) -> None:
        """A user message (text and media)."""
        if not parts:
            return
        self._close_pending()
        message = Message("user", parts)
        record = UserMessage(message_to_json(message))
        self._add(PlannedEntry(record))

    def user_text(self, text: str) -> None:
        """A user message holding one text part."""
        self.user((TextPart(text),))

    def assistant(
        self,
        parts: tuple[Part, ...],
        *,
        model: str,
        finish: str,
        usage: Usage,
        usage_raw: JSONValue,
    ) -> None:
        """One model response; its tool calls become pending until answered."""
        self._close_pending()
        recorded = [p.call_id for p in parts if isinstance(p, ToolCallPart)]
        parts = tuple(self._unique_call(p) for p in parts)
        message = Message("assistant", parts)
        record = AssistantMessage(
            message=message_to_json(message),
            wire=self.wire,
            model=model,
            finish=finish,
            usage=usage.to_json(),
            usage_raw=usage_raw,
            request_entry=None,
        )
        self._add(PlannedEntry(record))
        self._calls += 1
        for original, call in zip(recorded, message.tool_calls, strict=True):
            self._pending[original] = _Pending(call)

    def _unique_call(self, part: Part) -> Part:
        """A call whose id the session already used gets `<id>#<n>` (views need unique ids)."""
        if not isinstance(part, ToolCallPart):
            return part
        call_id = part.call_id
        number = 1
        while call_id in self._used_ids:
            number += 1
            call_id = f"{part.call_id}#{number}"
        self._used_ids.add(call_id)
        return part if call_id == part.call_id else replace(part, call_id=call_id)

    def unanswered(self) -> bool:
        """Whether a call of the last assistant turn still waits for its result."""
        return any(not pending.answered for pending in self._pending.values())

    def has_pending(self, call_id: str) -> bool:
        """Whether `call_id` is an unanswered call of the last assistant turn."""
        pending = self._pending.get(call_id)
        return pending is not None and not pending.answered

    def tool_result(
        self,
        call_id: str,
        output: bytes,
        *,
        line: int | None,
        is_error: bool = False,
        exit_code: int | None = None,
        media: tuple[MediaPart, ...] = (),
        exit_code_in_output: bool = False,
    ) -> None:
        """The recorded result of a pending call (`exit_code_in_output`: the output's own text
        states `exit_code`, as the agent's model saw it).

        Raises:
            ImportFormatError: no pending call has this id (an orphan result).
        """
        pending = self._pending.get(call_id)
        if pending is None or pending.answered:
            raise format_error(self.path, line, f"tool result for unknown call {call_id!r}")
        pending.answered = True
        status = "error" if is_error else "ok"
        self._result_entry(
            pending.call,
            output,
            status=status,
            is_error=is_error,
            exit_code=exit_code,
            media=media,
            exit_code_in_output=exit_code_in_output,
        )

    def _result_entry(
        self,
        call: ToolCallPart,
        output: bytes,
        *,
        status: str,
        is_error: bool,
        exit_code: int | None = None,
        media: tuple[MediaPart, ...] = (),
        exit_code_in_output: bool = False,
    ) -> None:
        result = ToolResult.for_output(
            call.call_id,
            call.name,
            output,
            status=status,
            is_error=is_error,
            exit_code=exit_code,
            exit_code_in_output=exit_code_in_output and exit_code is not None,
        )
        stored = tuple((m.media_type, base64.b64decode(m.data_b64)) for m in media)
        self._add(PlannedEntry(result, output, stored))

    def summary(self, text: str, origin: str) -> None:
        """A peer's own compaction summary (or title record), kept as a marked entry."""
        self._close_pending()
        summary = SummaryMessage(text, origin)
        self._add(PlannedEntry(summary))

    def warning(self, code: str, message: str) -> None:
        """A peer notice kept as a `warning` entry."""
        notice = WarningRecord(code, message)
        self._add(PlannedEntry(notice))

    def finished(self, answer: str) -> None:
        """The peer's recorded final answer (a submission)."""
        self._close_pending()
        finished = SessionFinished(answer, ())
        self._add(PlannedEntry(finished))

    def done(self, running: Mapping[str, str] | None = None) -> tuple[PlannedEntry, ...]:
        """Close pending calls and return the entries.

        Args:
            running: calls of the last turn (recorded id → where their work is recorded) that
                the peer started and whose work it recorded elsewhere — a sub-agent's own
                transcript — while the file ends before their result. Each keeps a
                `tool.started` receipt (allowed, mode `imported`) and no result, exactly as a
                Comal call interrupted mid-run, so resuming finishes it from that record (a
                `Task` is rebuilt from its child) instead of holding a guess as `uncertain`.
                Every other pending call is closed as `uncertain`.
        """
        for original, pending in self._pending.items():
            where = (running or {}).get(original)
            if pending.answered or where is None:
                continue
            pending.answered = True
            call = pending.call
            permission = RecordedPermission(
                "allow",
                IMPORTED_MODE,
                f"started in the recorded session; its work is recorded in {where}",
            )
            started = ToolStartedRecord(call.call_id, call.name, call.arguments, permission)
            self._add(PlannedEntry(started))
        self._close_pending()
        return tuple(self.entries)
