"""The oracle: Comal's budget and event schedule, with hindsight of what later calls use.

The oracle is not a strategy anyone could run: it reads the session's future. It events
exactly when Comal's replay did (the calls whose request was not an append of the previous
one) and lands within the size Comal's request had there. At an event it rebuilds the view of
the whole history with hindsight (`facts.fact_uses`: the facts later calls use and the outputs
that hold them):

1. every message verbatim, every tool output as a short reference stub (pairs intact);
2. when that does not fit the landing, whole old turns (a reply with its results) leave the
   view, oldest first, those holding no output a later call uses before the others — the task
   and the newest turn stay;
3. each output holding facts used later gets its lines holding them beside its stub, nearest
   use first, while they fit;
4. then such outputs are kept whole, nearest use first, while they fit.
Between events it appends like `raw` while its request stays within Comal's at that call; when
it would not (Comal entered a large output as a preview), the new outputs enter as stubs with
the lines of the facts later calls use, then whole, nearest use first, then the others whole
while they fit. Its request is never larger than Comal's at any call. Comal's gap to it (facts
in view, cost) is the headroom the engine has left at the same schedule and sizes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from comal.messages import Message, ToolResultPart
from comal.replay.facts import FactUse
from comal.replay.policies import Decision
from comal.replay.regret import Event
from comal.replay.rendering import SegmentCache, request_tokens
from comal.replay.transcript import Transcript


@dataclass(frozen=True, slots=True)
class Landing:
    """Where Comal's event landed: its request's tokens, and what it did."""

    tokens: int
    actions: tuple[str, ...]


def schedule_of(events: Sequence[Event]) -> dict[int, Landing]:
    """Comal's events by call: the oracle's schedule (with Comal's sizes at every call:
    `OraclePolicy.sizes`)."""
    return {e.call: Landing(e.landing, tuple(e.trigger.split("+"))) for e in events}


def stub(part: ToolResultPart) -> str:
    """The short reference an output not in view leaves."""
    lines = part.content.count("\n") + 1
    return f"[output of call {part.call_id} ({part.name}): {lines} lines, not in view]"


@dataclass(slots=True)
class OraclePolicy:
    """Replays a transcript on Comal's event schedule with hindsight (module docstring)."""

    transcript: Transcript
    cache: SegmentCache
    schedule: Mapping[int, Landing]
    uses: Sequence[FactUse]
    sizes: Sequence[int] = ()
    """Comal's request tokens at each call: the oracle's request is never larger."""
    name: str = "oracle"
    _base: tuple[Message, ...] = ()
    _cut: int = 0
    _call_of: dict[int, str] = field(default_factory=dict)

    def decide(self, history: tuple[Message, ...], call_index: int, /) -> Decision:
        """Append, or at one of Comal's events land with hindsight."""
        system = self.transcript.system
        landing = self.schedule.get(call_index)
        if landing is None:
            view = self._append(history[self._cut :], call_index)
            self._base, self._cut = view, len(history)
            return Decision(view, system)
        view = self.land(history, call_index, landing.tokens)
        self._base, self._cut = view, len(history)
        return Decision(view, system, actions=landing.actions)

    def _append(self, new: tuple[Message, ...], call_index: int) -> tuple[Message, ...]:
        """The view so far with `new` after it: verbatim like `raw` while that stays within
        Comal's request at this call; else the new outputs enter as stubs, with the lines of
        the facts later calls use, then whole, nearest use first, then the rest whole, oldest
        first, while they fit (Comal enters a large output as a preview: the same room)."""
        view = self._base + new
        if call_index >= len(self.sizes) or not new:
            return view
        limit = self.sizes[call_index]
        if self._size(view) <= limit:
            return view
        results = {p.call_id: p for m in new for p in m.tool_results}
        content = {call: stub(part) for call, part in results.items()}
        units = [[i] for i in range(len(new))]
        kept = [True] * len(new)
        size = self._size(self._base + _view(new, units, kept, content))
        wanted = self._wanted(results, call_index)
        size = self._fill(results, content, wanted, size, limit)
        for call, part in results.items():
            delta = self._cost(part, part.content) - self._cost(part, content[call])
            if content[call] != part.content and size + delta <= limit:
                content[call] = part.content
                size += delta
        return self._base + _view(new, units, kept, content)

    def _wanted(
        self, results: Mapping[str, ToolResultPart], call_index: int
    ) -> list[tuple[str, tuple[str, ...]]]:
        """Facts used at `call_index` or later, nearest use first, with the outputs among
        `results` that hold them."""
        if not self._call_of:
            self._call_of = {o.entry_index: o.call_id for o in self.transcript.outputs}
        wanted: list[tuple[str, tuple[str, ...]]] = []
        for use in sorted(self.uses, key=lambda u: (u.call_index, u.fact)):
            if use.call_index < call_index:
                continue
            sources = tuple(
                self._call_of[s] for s in use.sources if self._call_of.get(s) in results
            )
            if sources:
                wanted.append((use.fact, sources))
        return wanted

    def _fill(
        self,
        results: Mapping[str, ToolResultPart],
        content: dict[str, str],
        wanted: Sequence[tuple[str, tuple[str, ...]]],
        size: int,
        tokens: int,
    ) -> int:
        """Give the outputs holding `wanted` facts their lines, then their whole text, nearest
        use first, while the request stays within `tokens`; returns the request's size."""
        order = list(dict.fromkeys(c for _, sources in wanted for c in sources if c in results))
        covered: set[str] = set()
        for call in order:
            part = results[call]
            facts = {f for f, sources in wanted if call in sources and f not in covered}
            if not facts:
                continue
            excerpt = self._excerpt(part, content[call], [(f, (call,)) for f in facts])
            delta = self._cost(part, excerpt) - self._cost(part, content[call])
            if excerpt != content[call] and size + delta <= tokens:
                content[call] = excerpt
                size += delta
                covered |= {f for f in facts if f in excerpt}
        for call in order:
            part = results[call]
            delta = self._cost(part, part.content) - self._cost(part, content[call])
            if size + delta <= tokens:
                content[call] = part.content
                size += delta
        return size

    def land(
        self, history: tuple[Message, ...], call_index: int, tokens: int
    ) -> tuple[Message, ...]:
        """The view of `history` at most `tokens` large that keeps the most later-used facts."""
        results = {p.call_id: p for m in history for p in m.tool_results}
        wanted = self._wanted(results, call_index)
        useful = {call for _, sources in wanted for call in sources}
        content = {call: stub(part) for call, part in results.items()}
        excerpts = {call: self._excerpt(results[call], content[call], wanted) for call in useful}
        room = sum(self._cost(results[c], e) - self._cost(results[c], content[c])
                   for c, e in excerpts.items())  # fmt: skip
        units = _units(history)
        kept = [True] * len(units)
        size = self._size(_view(history, units, kept, content))
        # Whole old turns leave, oldest first (never the task, never the newest turn): those
        # holding no useful output while the useful lines would not fit beside the rest, then
        # any while even the stubs do not fit.
        for useless_only, goal in ((True, tokens - room), (False, tokens)):
            for number in range(1, len(units) - 1):
                if size <= goal:
                    break
                calls = {p.call_id for i in units[number] for p in history[i].tool_results}
                if not kept[number] or (useless_only and calls & useful):
                    continue
                kept[number] = False
                size -= self._unit_size(history, units[number], content)
        visible = {p.call_id for n, unit in enumerate(units) if kept[n] for i in unit
                   for p in history[i].tool_results}  # fmt: skip
        shown = {c: p for c, p in results.items() if c in visible}
        self._fill(shown, content, [w for w in wanted if set(w[1]) & visible], size, tokens)
        return _view(history, units, kept, content)

    @staticmethod
    def _excerpt(
        part: ToolResultPart, reference: str, wanted: Sequence[tuple[str, tuple[str, ...]]]
    ) -> str:
        """The stub with the output's lines that hold facts of `wanted` it is a source of."""
        facts = {f for f, sources in wanted if part.call_id in sources}
        lines = [line for line in part.content.splitlines() if any(f in line for f in facts)]
        return reference + "\n" + "\n".join(lines) if lines else reference

    def _cost(self, part: ToolResultPart, text: str) -> int:
        shown = part if text == part.content else replace(part, content=text, media=())
        segment = self.cache.part("user", shown)
        return 0 if segment is None else segment.size

    def _unit_size(
        self, history: tuple[Message, ...], unit: Sequence[int], content: Mapping[str, str]
    ) -> int:
        messages = _view(history, [unit], [True], content)
        return self.cache.message_tokens(messages)

    def _size(self, view: tuple[Message, ...]) -> int:
        return request_tokens(self.cache.request(self.transcript.system, view))


def _units(history: tuple[Message, ...]) -> list[list[int]]:
    """Message indices in droppable units: a reply with calls and the message answering them
    together, every other message alone."""
    units: list[list[int]] = []
    index = 0
    while index < len(history):
        message = history[index]
        if message.role == "assistant" and message.tool_calls and index + 1 < len(history):
            units.append([index, index + 1])
            index += 2
        else:
            units.append([index])
            index += 1
    return units


def _view(
    history: tuple[Message, ...],
    units: Sequence[Sequence[int]],
    kept: Sequence[bool],
    content: Mapping[str, str],
) -> tuple[Message, ...]:
    """The kept units' messages, every tool output shown as `content` says."""
    out: list[Message] = []
    for unit, keep in zip(units, kept, strict=True):
        if not keep:
            continue
        for index in unit:
            message = history[index]
            if message.role != "user" or not message.tool_results:
                out.append(message)
                continue
            parts = tuple(
                replace(p, content=content[p.call_id], media=())
                if isinstance(p, ToolResultPart) and content.get(p.call_id, p.content) != p.content
                else p
                for p in message.parts
            )
            out.append(Message("user", parts))
    return tuple(out)
