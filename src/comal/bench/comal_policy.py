"""Comal's own engine as a replay policy, driven exactly as the live loop drives it.

A temporary non-durable ledger holds one replay session. Before call *k* the recorded entries up
to that call (user messages, assistant messages, tool results — never the peer's own summaries)
are appended, then a fresh `ContextEngine` prepares the request, as the loop does before every
model call. The engine's own entries (projections, checkpoints) stay in the ledger between calls,
so its decisions persist as they do live. `PreparedView.messages` is the request.

Facts are reachable for Comal when in view or inside evidence the request names by reference
(`evt_…` ids of `tool.result` entries): `Decision.reachable_refs` holds the planned-entry indices
(see `Transcript.entries`) of the results named. A request that prints the evidence index call
(`EvidenceRead {"ref":"index"}`, which lists every result of the session with its exact ref)
reaches every recorded output: `Decision.reachable_all`.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from comal.bench.policies import Budget, Decision
from comal.bench.transcript import REPLAYED_KINDS, Transcript
from comal.context.engine import ContextEngine, EngineSettings, FixedParts
from comal.context.evidence_index import INDEX_CALL
from comal.context.tokens import TokenCounter
from comal.importers import append_planned
from comal.ledger import Ledger
from comal.messages import Message, TextPart, ToolResultPart

_EVT = re.compile(r"evt_[0-9a-f]{32}")


@dataclass(slots=True)
class ComalPolicy:
    """Replays a transcript through `ContextEngine.prepare()` (see module docstring)."""

    transcript: Transcript
    budget: Budget
    counter: TokenCounter
    name: str = "comal"
    _dir: tempfile.TemporaryDirectory[str] | None = None
    _ledger: Ledger | None = None
    _session: str = ""
    _appended: int = 0
    _index_of: dict[str, int] = field(default_factory=dict)

    def _open(self) -> Ledger:
        if self._ledger is None:
            self._dir = tempfile.TemporaryDirectory(prefix="comal-replay-")
            self._ledger = Ledger.open(Path(self._dir.name) / "replay.db", durable=False)
            self._session = self._ledger.create_session(
                cwd=self.transcript.cwd, model=self.transcript.model, source="bench:replay"
            )
            self._ledger.append(
                self._session,
                "session.started",
                {
                    "cwd": self.transcript.cwd,
                    "provider": "",
                    "wire": "",
                    "model": self.transcript.model,
                    "window": {"tokens": self.budget.window, "source": "bench"},
                    "source": "bench:replay",
                },
            )
        return self._ledger

    def feed(self, entries_end: int) -> None:
        """Append the recorded entries before `entries_end` (not timed as a decision)."""
        ledger = self._open()
        for index in range(self._appended, entries_end):
            planned = self.transcript.entries[index]
            if planned.kind in REPLAYED_KINDS:
                entry = append_planned(ledger, self._session, planned)
                self._index_of[entry.id] = index
        self._appended = max(self._appended, entries_end)

    def prepare(self) -> Decision:
        """One engine decision over what has been fed."""
        ledger = self._open()
        settings = EngineSettings(
            window_tokens=self.budget.window,
            window_source="bench",
            output_reserve_tokens=self.budget.reserve,
            margin_tokens=self.budget.margin,
        )
        fixed = FixedParts(system=self.transcript.system, instructions="", tools=())
        engine = ContextEngine(
            ledger,
            self._session,
            settings,
            fixed,
            model=self.transcript.model,
            counter=self.counter,
        )
        view = engine.prepare()
        named = {self._index_of[ref] for ref in _refs(view.messages) if ref in self._index_of}
        return Decision(
            tuple(view.messages),
            view.system,
            reachable_refs=frozenset(named),
            reachable_all=_names_index(view.messages),
            actions=view.actions,
        )

    def decide(self, _history: tuple[Message, ...], call_index: int, /) -> Decision:
        """Feed the entries before call `call_index`, then prepare."""
        self.feed(self.transcript.calls[call_index].entries_end)
        return self.prepare()

    def close(self) -> None:
        """Drop the temporary ledger."""
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


def _refs(messages: tuple[Message, ...]) -> set[str]:
    found: set[str] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                found.update(_EVT.findall(part.text))
            elif isinstance(part, ToolResultPart):
                found.update(_EVT.findall(part.content))
    return found
