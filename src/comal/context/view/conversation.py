"""The conversation as blocks: what of the ledger can enter active memory, in order.

A *block* is the smallest unit a view may start at, so tool pairs are never cut in half:
- a user block: one `message.user` (or an imported peer summary, `message.summary`, rendered as
  marked user text);
- an assistant block: one `message.assistant` together with the `tool.result` entries of its
  calls, in call order — wherever those results sit in the ledger.

Skipped: assistant messages superseded by a `response.discarded` entry that names them, results
that answer no call of an assistant message (kept in the ledger, reachable by EvidenceRead, never
sent), and second results for an already answered call. Which result answers which call is the
rule of `pairing`. Operational entries (receipts, usage,
locks, decisions) never enter the conversation.

A call id used again (some servers number calls per response: `call_0` every turn) is sent as
`<id>-<n>`, its n-th use (characters every wire accepts in an id), in its call and its result
alike: a request never holds one id twice (wires refuse it), while the ledger keeps the ids as
the server sent them. The n of a call is fixed when its message is taken, from the messages
before it, so it never changes later.

Everything here is a pure function of the entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from comal.context.view.rendering import ResultFacts
from comal.ledger.entry import Entry
from comal.ledger.records import (
    Kind,
    RecordedMedia,
    ResponseDiscardedRecord,
    SummaryMessage,
    ToolResult,
    UserMessage,
    call_id_of,
)
from comal.ledger.records import fields as f
from comal.messages import JSONObject, Message, TextPart, ToolCallPart, message_from_json
from comal.session import Pairing, assistant_message
from comal.values import value

SUMMARY_MARK = "[summary recorded by"


@dataclass(frozen=True, slots=True)
class MediaRef:
    """An image (or other media) attached to a tool result."""

    media_type: str
    size_bytes: int
    data_b64: str | None
    blob: str | None


@value
class ResultEntry:
    """One `tool.result` with the facts a view needs."""

    entry: Entry
    facts: ResultFacts
    call_id: str
    is_error: bool
    media: tuple[MediaRef, ...] = ()

    @property
    def seq(self) -> int:
        """The result's ledger position."""
        return self.entry.seq

    @property
    def projectable(self) -> bool:
        """Errors are never projected: they are what the model most needs to see again."""
        return not self.is_error and self.facts.status == "ok"


@value
class Block:
    """A unit of conversation that is never split."""

    role: Literal["user", "assistant"]
    entry: Entry
    message: Message
    results: tuple[ResultEntry, ...] = ()
    missing: tuple[str, ...] = ()
    """Call ids of this assistant message with no result yet (a view with these is invalid)."""

    @property
    def seq(self) -> int:
        """Position of the opening entry."""
        return self.entry.seq

    @property
    def last_seq(self) -> int:
        """Largest ledger position among the block's entries."""
        return max([self.entry.seq, *(r.seq for r in self.results)])


def _media(items: tuple[RecordedMedia, ...]) -> tuple[MediaRef, ...]:
    out = []
    for item in items:
        data = item.data_b64
        size = item.size_bytes
        if size is None:
            size = len(data) * 3 // 4 if data is not None else 0
        media_type = item.media_type
        out.append(
            MediaRef(
                "application/octet-stream" if media_type is None else media_type,
                size,
                data,
                item.blob,
            )
        )
    return tuple(out)


def result_entry(entry: Entry) -> ResultEntry:
    """Read a `tool.result` entry's facts."""
    result = ToolResult.from_entry(entry)
    size = result.size_bytes
    if size is None and result.body is not None:
        size = f.int_or_none(result.body, "size_bytes")
    digest = result.digest or (entry.body_hash or "sha256:unknown")
    facts = ResultFacts(
        ref=entry.id,
        name="tool" if result.name is None else result.name,
        size_bytes=size or 0,
        exit_code=result.exit_code,
        status="ok" if result.status is None else result.status,
        digest=digest,
        exit_code_in_output=bool(result.exit_code_in_output),
    )
    is_error = result.is_error or facts.status == "error"
    return ResultEntry(entry, facts, result.call_id or "", is_error, _media(result.media or ()))


def _message(raw: JSONObject | None) -> Message | None:
    if raw is None:
        return None
    try:
        return message_from_json(raw)
    except (ValueError, KeyError):
        return None


def _user_message(entry: Entry) -> Message | None:
    if entry.kind == Kind.MESSAGE_SUMMARY:
        summary = SummaryMessage.from_entry(entry)
        origin = "a peer agent" if summary.origin is None else summary.origin
        return Message("user", (TextPart(f"{SUMMARY_MARK} {origin}]\n{summary.text}"),))
    return _message(UserMessage.from_entry(entry).message)


class ConversationIndex:
    """Conversation blocks kept up to date as entries are appended (read each entry once).

    `extend(new_entries)` takes entries in ledger order, each exactly once; `blocks()` is then
    equal to `conversation_blocks(all entries so far)`. Calls and results are paired by
    `pairing` (the one rule, shared with the work state and `/state`).
    """

    def __init__(self) -> None:
        self._blocks: list[Block] = []
        self._pairing = Pairing()
        self._results: dict[str, ResultEntry] = {}
        self._assistant: dict[str, int] = {}
        """Block index of each assistant message, by entry id."""
        self._superseded: set[str] = set()
        self._dirty: set[int] = set()
        self._uses: dict[str, int] = {}
        """How many calls so far used each id (as sent, renamed ones included)."""
        self._sent_ids: dict[str, tuple[str, ...]] = {}
        """The ids an assistant message's calls are sent with, by entry id, when any differs."""
        self._taken = 0
        self._last_id = ""

    def extend(self, entries: Sequence[Entry]) -> ConversationIndex:
        """Take newly appended entries into account."""
        for entry in entries:
            self._take(entry)
        if entries:
            self._taken += len(entries)
            self._last_id = entries[-1].id
        return self

    def pairing_of(self, entries: Sequence[Entry]) -> Pairing | None:
        """The pairing of exactly `entries` when they are what this index has taken (None
        otherwise): the work state reads the same pairing instead of pairing them again.
        Shared: callers copy it before taking more entries into it."""
        if len(entries) != self._taken or (entries and entries[-1].id != self._last_id):
            return None
        return self._pairing

    def result_of(self, entry: Entry) -> ResultEntry:
        """`result_entry(entry)`, read once (the view's, with the id as recorded)."""
        found = self._results.get(entry.id)
        if found is None or found.call_id != (call_id_of(entry) or ""):
            return result_entry(entry)
        return found

    def _take(self, entry: Entry) -> None:
        if self._pairing.take(entry):
            self._dirty.update(self._assistant.values())  # earlier pairings changed
        if entry.kind in (Kind.MESSAGE_USER, Kind.MESSAGE_SUMMARY):
            message = _user_message(entry)
            if message is not None:
                self._blocks.append(Block("user", entry, message))
        elif entry.kind == Kind.MESSAGE_ASSISTANT:
            message = assistant_message(entry)
            if message is None:
                return
            message = self._unique_ids(entry, message)
            index = len(self._blocks)
            self._blocks.append(Block("assistant", entry, message))
            self._assistant[entry.id] = index
            self._dirty.add(index)
        elif entry.kind == Kind.TOOL_RESULT:
            site = self._pairing.site_of(entry)
            if site is None or site.message is None:
                return
            self._results[entry.id] = result_entry(entry)
            self._dirty.add(self._assistant[site.message.id])
        elif entry.kind == Kind.RESPONSE_DISCARDED:
            target = ResponseDiscardedRecord.from_entry(entry).entry
            if target is not None:
                self._superseded.add(target)

    def blocks(self) -> list[Block]:
        """The blocks so far, in ledger order (superseded assistant messages left out)."""
        for index in sorted(self._dirty):
            block = self._blocks[index]
            sites = self._pairing.sites_of(block.entry)
            sent = self._sent_ids.get(block.entry.id)
            ordered = tuple(
                self._result(s.result, None if sent is None else sent[s.position])
                for s in sites
                if s.result is not None
            )
            missing = tuple(s.call.call_id for s in sites if s.result is None)
            self._blocks[index] = Block("assistant", block.entry, block.message, ordered, missing)
        self._dirty.clear()
        if not self._superseded:
            return list(self._blocks)
        return [b for b in self._blocks if b.entry.id not in self._superseded]

    def _result(self, entry: Entry, sent_id: str | None = None) -> ResultEntry:
        found = self._results.get(entry.id)
        if found is None:
            found = self._results[entry.id] = result_entry(entry)
        if sent_id is not None and sent_id != found.call_id:
            found = self._results[entry.id] = replace(found, call_id=sent_id)
        return found

    def _unique_ids(self, entry: Entry, message: Message) -> Message:
        """`message` with each call id used before sent as its n-th use (module docstring)."""
        calls = message.tool_calls
        sent: list[str] = []
        for call in calls:
            n = self._uses.get(call.call_id, 0)
            name = call.call_id if n == 0 else f"{call.call_id}-{n}"
            while n and name in self._uses:  # a server's own id could look like a renamed one
                n += 1
                name = f"{call.call_id}-{n}"
            self._uses[call.call_id] = n + 1  # n only grew from this id's count
            self._uses.setdefault(name, 1)
            sent.append(name)
        if sent == [c.call_id for c in calls]:
            return message
        self._sent_ids[entry.id] = tuple(sent)
        renamed = iter(sent)
        parts = tuple(
            replace(p, call_id=next(renamed)) if isinstance(p, ToolCallPart) else p
            for p in message.parts
        )
        return Message(message.role, parts)


def conversation_blocks(entries: Sequence[Entry]) -> list[Block]:
    """The conversation blocks of a session's entries, in ledger order."""
    return ConversationIndex().extend(entries).blocks()
