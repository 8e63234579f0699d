"""Comal's own engine as a replay policy, driven exactly as the live loop drives it.

A temporary non-durable ledger holds one replay session. Before call *k* the recorded entries up
to that call (user messages, assistant messages, tool results — never the peer's own summaries)
are appended, then the session's one `ContextEngine` prepares the request, as the loop does
before every model call. The engine's own entries (projections, checkpoints) stay in the ledger
between calls, so its decisions persist as they do live. `PreparedView.messages` is the request.

The engine sizes its own output reserve from the outputs fed so far (its live rule, no fixed
reserve): `Decision.reserve` reports it, and the request's overflow is judged with it. A
recorded reply longer than the output the request asked for (`Decision.max_output`) is cut,
as it would be live: `after_cut` records the `response.discarded` and prepares the re-ask.

Facts are reachable for Comal when in view or inside evidence the request names by exact
reference — the `evt_…` id of a `tool.result` entry, or its per-session ordinal (`E17`) in a
checkpoint's evidence section, which `EvidenceRead` takes alike: `Decision.reachable_refs` holds
the planned-entry indices (see `Transcript.entries`) of the results named. A request that
prints the evidence index call (`EvidenceRead {"ref":"index"}`, which lists every result of the
session with its exact ref)
is reported apart (`Decision.reachable_all`, the `facts_reachable_via_index` figure): the index
names no output by its own reference in the request itself.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from comal.config import ContextConfig
from comal.context.engine import ContextEngine, FixedParts
from comal.context.factory import ModelWindow, engine_for
from comal.context.measure.tokens import TokenCounter
from comal.context.relief.checkpoint import EVIDENCE_HEADER, WORK_STATE_HEADER
from comal.context.relief.evidence_names import INDEX_CALL, named_ordinals
from comal.errors import OutputLengthError
from comal.ids import now_ms
from comal.importers import append_planned
from comal.importers.plan import PlannedEntry
from comal.ledger import Ledger
from comal.ledger.records import (
    AssistantMessage,
    Kind,
    ProviderRequest,
    RecordedWindow,
    ResponseDiscardedRecord,
    SessionStarted,
)
from comal.messages import JSONObject, Message, TextPart, ToolResultPart
from comal.replay.policies import Budgets, Decision
from comal.replay.rendering import SegmentCache, request_tokens
from comal.replay.transcript import REPLAYED_KINDS, ReplayCall, Transcript
from comal.usage import PROMPT_CACHE_TTL_S

_EVT = re.compile(r"evt_[0-9a-f]{32}")
_STATE_REF = re.compile(r" · E([1-9][0-9]*)(?=:|$)", re.MULTILINE)
"""A work-state line's reference (`workstate.StateLine`): its ordinal, at the line's end or
before the detail that follows it."""
_Sent = tuple[str, tuple[Message, ...], JSONObject]


@dataclass(slots=True)
class ComalPolicy:
    """Replays a transcript through `ContextEngine.prepare()` (see module docstring)."""

    transcript: Transcript
    budget: Budgets
    counter: TokenCounter
    name: str = "comal"
    cache_ttl_s: float = PROMPT_CACHE_TTL_S
    """What the engine is told of the prompt cache's time-to-live (`[context] cache_ttl_s`)."""
    _dir: tempfile.TemporaryDirectory[str] | None = None
    _ledger: Ledger | None = None
    _session: str = ""
    _appended: int = 0
    _index_of: dict[str, int] = field(default_factory=dict)
    _by_ordinal: dict[int, int] = field(default_factory=dict)
    """Planned-entry index of the session's n-th `tool.result` (its ordinal `En`)."""
    _engine: ContextEngine | None = None
    _call_at: dict[int, ReplayCall] = field(default_factory=dict)
    """The call whose reply is each planned `message.assistant` (by entry index)."""
    _sent: _Sent | None = None
    """The last request prepared (system, messages, fingerprint), not yet answered."""
    _replied_at: int = 0
    """`created_at` of the newest `message.assistant` fed (the replay ledger's own clock)."""
    _now: int | None = None
    """The engine's clock for the call being prepared: the replay ledger's time of the previous
    response plus the idle the recording measured after it; None when it recorded no time."""

    def _open(self) -> Ledger:
        if self._ledger is None:
            self._call_at = {call.entries_end: call for call in self.transcript.calls}
            self._dir = tempfile.TemporaryDirectory(prefix="comal-replay-")
            self._ledger = Ledger.open(Path(self._dir.name) / "replay.db", durable=False)
            self._session = self._ledger.create_session(
                cwd=self.transcript.cwd, model=self.transcript.model, source="bench:replay"
            )
            started = SessionStarted(
                cwd=self.transcript.cwd,
                provider="",
                wire="",
                model=self.transcript.model,
                window=RecordedWindow(self.budget.window, "bench"),
                source="bench:replay",
            )
            self._ledger.append_record(self._session, started)
        return self._ledger

    def feed(self, entries_end: int) -> None:
        """Append the recorded entries before `entries_end` (not timed as a decision)."""
        ledger = self._open()
        for index in range(self._appended, entries_end):
            planned = self.transcript.entries[index]
            if planned.kind == Kind.MESSAGE_ASSISTANT and self._sent is not None:
                planned = self._measured(ledger, index, planned, self._sent)
                self._sent = None
            if planned.kind in REPLAYED_KINDS:
                entry = append_planned(ledger, self._session, planned)
                self._index_of[entry.id] = index
                if entry.kind == Kind.MESSAGE_ASSISTANT:
                    self._replied_at = entry.created_at
                if entry.kind == Kind.TOOL_RESULT:
                    self._by_ordinal[len(self._by_ordinal) + 1] = index
        self._appended = max(self._appended, entries_end)

    def prepare(self) -> Decision:
        """One engine decision over what has been fed."""
        engine = self._engine_for(self._open())
        view = engine.prepare()
        if isinstance(self.counter, SegmentCache):
            # Measured when the response is fed (outside the timed decision).
            fingerprint = engine.fingerprint.with_checkpoint(view.checkpoint_number).to_json()
            self._sent = (view.system, tuple(view.messages), fingerprint)
        named = {self._index_of[ref] for ref in _refs(view.messages) if ref in self._index_of}
        named |= {
            self._by_ordinal[n] for n in _evidence_ordinals(view.messages) if n in self._by_ordinal
        }
        return Decision(
            tuple(view.messages),
            view.system,
            reachable_refs=frozenset(named),
            reachable_all=_names_index(view.messages),
            actions=view.actions,
            reserve=engine.output_reserve(),
            max_output=view.output_reserve,
        )

    def after_cut(self, allowed: int, size: int) -> Decision | None:
        """The reply was cut at `allowed` output tokens: record it as the live loop does
        (`response.discarded`, OUTPUT_LENGTH, then the grown reserve) and prepare again.

        Returns:
            The re-asked request, or None when no larger reserve fits (live: the turn stops
            with OUTPUT_LENGTH; the replay goes on with the recorded reply).
        """
        ledger = self._open()
        engine = self._engine_for(ledger)
        sent, self._sent = self._sent, None
        fingerprint: JSONObject = sent[2] if sent is not None else {}
        request = ledger.append_record(
            self._session, ProviderRequest(self.transcript.model, "", fingerprint)
        )
        usage: JSONObject = {"new_input": size, "cache_read": 0, "cache_write": 0}
        usage["output"] = allowed
        discarded = ResponseDiscardedRecord(
            reason="OUTPUT_LENGTH",
            message={"role": "assistant", "parts": []},
            usage=usage,
            output_reserve=allowed,
            request_entry=request.id,
        )
        ledger.append_record(self._session, discarded)
        try:
            engine.grow_output_reserve()
        except OutputLengthError:
            return None
        return self.prepare()

    def _measured(
        self, ledger: Ledger, index: int, planned: PlannedEntry, sent: _Sent
    ) -> PlannedEntry:
        """The recorded response, answering the request Comal sent, measured as a provider would.

        Live, the provider reports the input it measured for the request the engine prepared,
        and the engine anchors on it (`anchors.py`). Here the measuring provider is the harness's
        own ruler, the one every policy is priced and every peer's threshold is checked with: the
        recorded `usage` (measured on the original agent's different request) is replaced by
        the size of Comal's request, tied to a `provider.request` carrying its fingerprint.
        """
        system, messages, fingerprint = sent
        assert isinstance(self.counter, SegmentCache)
        size = request_tokens(self.counter.request(system, messages))
        request = ledger.append_record(
            self._session, ProviderRequest(self.transcript.model, "", fingerprint)
        )
        reply = AssistantMessage.from_payload(planned.payload)
        measured: JSONObject = {"new_input": size, "cache_read": 0, "cache_write": 0}
        call = self._call_at.get(index)
        if call is not None:
            # The whole reply's output, as the provider reports it live (a recorded streaming
            # snapshot can hold a fraction of it, a Codex rollout nothing).
            measured["output"] = self.transcript.reply_tokens(call, self.counter.count)
        answered = replace(reply, usage=measured, request_entry=request.id)
        return replace(planned, record=answered)

    def _engine_for(self, ledger: Ledger) -> ContextEngine:
        # One engine for the whole session, as the agent loop keeps one: it reads the ledger
        # incrementally, and its views are a pure function of the ledger either way.
        if self._engine is None:
            # Only the margin and the cache's time-to-live are the replay's; every other
            # setting is the default configuration's, as for a session with no config file.
            context = ContextConfig(
                margin_tokens=self.budget.at(0).margin, cache_ttl_s=self.cache_ttl_s
            )
            fixed = FixedParts(system=self.transcript.system, instructions="", tools=())
            self._engine = engine_for(
                ledger,
                self._session,
                ModelWindow(self.budget.window, "bench"),
                fixed,
                model=self.transcript.model,
                context=context,
                counter=self.counter,
                clock=self._clock,
            )
        return self._engine

    def _clock(self) -> int:
        return now_ms() if self._now is None else self._now

    def decide(self, _history: tuple[Message, ...], call_index: int, /) -> Decision:
        """Feed the entries before call `call_index`, then prepare (at the recorded time)."""
        call = self.transcript.calls[call_index]
        self.feed(call.entries_end)
        idle = self.transcript.since_reply_ms(call)
        self._now = None if idle is None else self._replied_at + idle
        return self.prepare()

    def close(self) -> None:
        """Drop the temporary ledger."""
        self._engine = None
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


def _names_index(messages: tuple[Message, ...]) -> bool:
    """Whether the request prints the exact call of the evidence index (see module docstring)."""
    return any(
        isinstance(part, TextPart) and INDEX_CALL in part.text
        for message in messages
        for part in message.parts
    )


def _evidence_ordinals(messages: tuple[Message, ...]) -> set[int]:
    """Ordinals (`E17`, `E20–E57`) a checkpoint names: exact references `EvidenceRead` takes
    like full ids. Read only where the engine writes them, never in verbatim outputs (a lint
    code `E501` names nothing): anywhere in the evidence section, and in the work state at
    the end of a line's reference (`… · E17`, or `… · E17: detail`)."""
    found: set[int] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and EVIDENCE_HEADER in part.text:
                section = part.text.split(EVIDENCE_HEADER, 1)[1].split("\n## ", 1)[0]
                found |= named_ordinals(section)
            if isinstance(part, TextPart) and WORK_STATE_HEADER in part.text:
                section = part.text.split(WORK_STATE_HEADER, 1)[1].split("\n## ", 1)[0]
                found |= {int(n) for n in _STATE_REF.findall(section)}
    return found


def _refs(messages: tuple[Message, ...]) -> set[str]:
    found: set[str] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                found.update(_EVT.findall(part.text))
            elif isinstance(part, ToolResultPart):
                found.update(_EVT.findall(part.content))
    return found
