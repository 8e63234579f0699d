"""Which call each `tool.started` and `tool.result` belongs to: the one pairing rule.

The conversation view, the work state a checkpoint carries, `/state`, recovery, `/rewind`, the
export, the TUI's past items and EvidenceRead all read calls and their results through this
module, so a checkpoint names the pairing of the view it summarises and recovery settles
exactly the calls `/state` lists as pending.

A *call site* is one tool call of a recorded `message.assistant` (its position among the
message's calls), or a call known only from its `tool.started` receipt (a *bare* start: a call
the runner made on its own behalf, such as a delegated `Write`). The rule:

- A `tool.result` answers the most recent assistant message still waiting on its call id (in
  that message, its first call with that id still waiting). Providers reuse call ids across
  turns (`call_0` every turn): "the latest call with that id" pairs a result with a call of a
  later turn (the work state read results that way once, so its checkpoint described a read
  of one turn as the edit of the next), and "the first call with that id" pairs a new result
  with a call answered turns ago. A message waits only on the calls it has not had an answer
  for, so a result never answers a call twice, and never a call recorded after it.
- A `tool.started` marks the call the next result for its id would answer (the first of those
  not started yet; a second start of the same call replaces the receipt). When no message
  waits on its id it opens a bare call site, which a later result with that id answers when no
  message waits on it (the latest such start first).
- A *duplicated* result (a second one for an id) answers the next message still waiting on
  the id, if any; otherwise it is *orphaned*, like a result whose call was never recorded:
  orphans answer nothing, stay in the ledger (EvidenceRead reaches them) and never enter the
  conversation.
- An assistant message a `response.discarded` names (its optional `entry`) is superseded: it
  waits on nothing, even when the `response.discarded` comes after it: everything is then
  paired again without it (`Pairing.take` says when an earlier pairing changed), so an
  incremental pairing always equals the pairing of all its entries read at once.

Pure: a function of the entries, in ledger order.
"""

from __future__ import annotations

from collections.abc import Sequence

from comal.ledger.entry import Entry
from comal.ledger.records import (
    AssistantMessage,
    Kind,
    ResponseDiscardedRecord,
    ToolStartedRecord,
    call_id_of,
    ran_call_of,
)
from comal.messages import JSONObject, Message, ToolCallPart, message_from_json
from comal.values import value

PAIRING_KINDS = (
    Kind.MESSAGE_ASSISTANT,
    Kind.TOOL_STARTED,
    Kind.TOOL_RESULT,
    Kind.RESPONSE_DISCARDED,
)
"""The entry kinds pairing reads (others are ignored)."""


@value
class CallSite:
    """One tool call with the receipt and the result paired with it."""

    call: ToolCallPart
    message: Entry | None
    """The assistant message holding the call; None for a bare start."""
    position: int
    """The call's index among the message's tool calls (0 for a bare start)."""
    started: Entry | None = None
    result: Entry | None = None

    @property
    def name(self) -> str:
        """The tool name the receipt records (what ran), else the message's."""
        return self.ran()[0]

    @property
    def arguments(self) -> JSONObject:
        """The arguments the receipt records (what ran), else the message's."""
        return self.ran()[1]

    def ran(self) -> tuple[str, JSONObject]:
        """(`name`, `arguments`), read from the receipt once."""
        if self.started is None:
            return self.call.name, self.call.arguments
        name, arguments = ran_call_of(self.started)
        return "tool" if name is None else name, arguments


def _call_id(entry: Entry) -> str:
    return call_id_of(entry) or ""


_PARSED: dict[str, tuple[JSONObject, Message | None]] = {}
"""Assistant messages already parsed, by entry id, with the payload object they came from
(the pairing and the conversation view read the same messages; a payload is never modified,
so the same payload object always holds the same message)."""


def assistant_message(entry: Entry) -> Message | None:
    """The message of a `message.assistant` entry (None when it does not parse)."""
    hit = _PARSED.get(entry.id)
    if hit is not None and hit[0] is entry.payload:
        return hit[1]
    raw = AssistantMessage.from_entry(entry).message
    message: Message | None = None
    if raw is not None:
        try:
            message = message_from_json(raw)
        except (ValueError, KeyError):
            message = None
    if len(_PARSED) >= 100_000:
        _PARSED.clear()
    _PARSED[entry.id] = (entry.payload, message)
    return message


def tool_calls(entry: Entry) -> tuple[ToolCallPart, ...]:
    """The tool calls of a `message.assistant` entry (none when its message does not parse)."""
    message = assistant_message(entry)
    return () if message is None else message.tool_calls


class Pairing:
    """Call sites paired with their receipts and results, kept up to date entry by entry.

    `take(entry)` takes entries in ledger order, each once; after it, `sites`, `orphans` and
    `site_of` equal those of `pair(all entries so far)`.
    """

    sites: list[CallSite]
    """Every call site, in the order its message (or bare start) was recorded."""
    orphans: list[Entry]
    """Results that answer no call, in ledger order."""

    def __init__(self) -> None:
        self._by_message: dict[str, tuple[int, ...]]
        self._waiting: dict[str, list[int]]
        """Per call id, the message call sites still waiting on it, oldest first (an id no
        site waits on any more is dropped: a long session answers thousands of ids)."""
        self._bare: dict[str, list[int]]
        """Per call id, the bare starts still waiting on it, oldest first."""
        self._by_entry: dict[str, int]
        self._superseded: set[str]
        self._taken: list[Entry]
        """Every entry taken (of `PAIRING_KINDS`), to pair again after a supersede."""
        self._reset()

    def copy(self) -> Pairing:
        """An independent pairing in the same state (sites are frozen and shared)."""
        other = Pairing()
        other.sites = list(self.sites)
        other.orphans = list(self.orphans)
        other._by_message = dict(self._by_message)
        other._waiting = {k: list(v) for k, v in self._waiting.items()}
        other._bare = {k: list(v) for k, v in self._bare.items()}
        other._by_entry = dict(self._by_entry)
        other._superseded = set(self._superseded)
        other._taken = list(self._taken)
        return other

    def extend(self, entries: Sequence[Entry]) -> bool:
        """Take `entries`; True when earlier pairings changed (see `take`)."""
        changed = False
        for entry in entries:
            changed = self.take(entry) or changed
        return changed

    def take(self, entry: Entry) -> bool:
        """Pair one newly appended entry.

        Returns True when pairings made before it changed (a `response.discarded` superseded
        a message that had a start or a result), False when only new pairings were added.
        """
        if entry.kind not in PAIRING_KINDS:
            return False
        self._taken.append(entry)
        if entry.kind == Kind.MESSAGE_ASSISTANT:
            self._message(entry)
        elif entry.kind == Kind.TOOL_STARTED:
            self._started(entry)
        elif entry.kind == Kind.TOOL_RESULT:
            self._result(entry)
        else:
            return self._discarded(entry)
        return False

    def sites_of(self, message: Entry) -> list[CallSite]:
        """The call sites of an assistant message, in call order (none when superseded)."""
        return [self.sites[i] for i in self._by_message.get(message.id, ())]

    def site_of(self, entry: Entry) -> CallSite | None:
        """The call a `tool.result` answers (None: orphaned) or a `tool.started` belongs to."""
        index = self._by_entry.get(entry.id)
        return None if index is None else self.sites[index]

    def ran_arguments(self, result: Entry) -> JSONObject:
        """The arguments recorded by the `tool.started` receipt of the call `result` answers
        ({} when it is orphaned or its call has no receipt)."""
        site = self.site_of(result)
        if site is None or site.started is None:
            return {}
        return site.arguments

    def _message(self, entry: Entry) -> None:
        if entry.id in self._superseded:
            return
        indices = []
        for position, call in enumerate(tool_calls(entry)):
            index = len(self.sites)
            self.sites.append(CallSite(call, entry, position))
            self._waiting.setdefault(call.call_id, []).append(index)
            indices.append(index)
        self._by_message[entry.id] = tuple(indices)

    def _newest_waiting(self, call_id: str) -> list[int]:
        """The waiting sites on `call_id` of the most recent message waiting on it."""
        waiting = self._waiting.get(call_id)
        if not waiting:
            return []
        message = self.sites[waiting[-1]].message
        return [i for i in waiting if self.sites[i].message is message]

    def _started(self, entry: Entry) -> None:
        call_id = _call_id(entry)
        candidates = self._newest_waiting(call_id)
        if candidates:
            fresh = [i for i in candidates if self.sites[i].started is None]
            index = (fresh or candidates)[0]
            site = self.sites[index]
            # Built directly: `dataclasses.replace` costs several times the constructor here.
            self.sites[index] = CallSite(site.call, site.message, site.position, entry, site.result)
            self._by_entry[entry.id] = index
            return
        started = ToolStartedRecord.from_entry(entry)
        call = ToolCallPart(
            call_id, "tool" if started.name is None else started.name, started.arguments
        )
        self._by_entry[entry.id] = len(self.sites)
        self._bare.setdefault(call_id, []).append(len(self.sites))
        self.sites.append(CallSite(call, None, 0, started=entry))

    def _result(self, entry: Entry) -> None:
        call_id = _call_id(entry)
        candidates = self._newest_waiting(call_id)
        if candidates:
            index = candidates[0]
            waiting = self._waiting[call_id]
            waiting.remove(index)
            if not waiting:
                del self._waiting[call_id]
        elif self._bare.get(call_id):
            index = self._bare[call_id].pop()
        else:
            self.orphans.append(entry)
            return
        site = self.sites[index]
        self.sites[index] = CallSite(site.call, site.message, site.position, site.started, entry)
        self._by_entry[entry.id] = index

    def _discarded(self, entry: Entry) -> bool:
        target = ResponseDiscardedRecord.from_entry(entry).entry
        if target is None or target in self._superseded:
            return False
        self._superseded.add(target)
        indices = self._by_message.pop(target, None)
        if not indices:
            return False  # no calls, or not recorded yet: it will wait on nothing when it is
        changed = any(
            self.sites[i].started is not None or self.sites[i].result is not None for i in indices
        )
        # Pair everything again without the superseded message (rare: nothing in Comal
        # supersedes a recorded message; imported ledgers may).
        taken, superseded = self._taken, self._superseded
        self._reset()
        self._superseded = superseded
        for again in taken:
            self.take(again)
        return changed

    def _reset(self) -> None:
        self.sites = []
        self.orphans = []
        self._by_message = {}
        self._waiting = {}
        self._bare = {}
        self._by_entry = {}
        self._superseded = set()
        self._taken = []


def pair(entries: Sequence[Entry]) -> Pairing:
    """The pairing of a session's entries (any kinds, in ledger order)."""
    pairing = Pairing()
    pairing.extend(entries)
    return pairing


def call_occurrence(entries: Sequence[Entry], call_id: str) -> int:
    """Which use of `call_id` the latest assistant message making a call with it is: 0 for the
    first (and for an id never reused), 1 when one earlier message made a call with that id.

    With the id, it tells a call apart from the calls of earlier turns that reused its id
    (`call_0` every turn): what names derived from a call (a child session's id, a delegated
    write's call id) key on. Superseded messages made no call and are not counted.
    """
    messages = {
        site.message.id
        for site in pair(entries).sites
        if site.message is not None and site.call.call_id == call_id
    }
    return max(0, len(messages) - 1)
