"""Peers' context strategies, re-implemented from their documented behaviour.

Each policy turns the history before model call *k* into the messages of request *k*. Policies
keep state across calls (what was pruned or summarized stays so), like the agents they copy.
All of them share the harness's output reserve and margin (`Budget`); a threshold given as a
fraction applies to what is left after the reserve, `window − reserve`.

Sources are `shared/research/peers.md` (sections named in each docstring) and the paper
"The Complexity Trap" (Lindenbauer et al., arXiv 2508.21433).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from comal.messages import Message, TextPart, ToolResultPart

SUMMARY_OUTPUT_TOKENS = 2_000
"""Tokens of every LLM summary the compaction policies pay for."""
SUMMARY_PROMPT = (
    "Summarize the conversation so far for another model that will continue the task: goal, "
    "instructions, discoveries, work done, relevant files, next steps."
)
SUMMARY_PREFIX = "Another language model started to solve this problem and produced a summary:\n"


@dataclass(frozen=True, slots=True)
class Budget:
    """The window and what every policy leaves free in it."""

    window: int
    reserve: int
    margin: int

    @property
    def usable(self) -> int:
        """What is left after the output reserve: thresholds are fractions of this."""
        return self.window - self.reserve

    def overflows(self, request_tokens: int) -> bool:
        """True when request + reserve + margin exceed the window."""
        return request_tokens + self.reserve + self.margin > self.window


@dataclass(frozen=True, slots=True)
class Decision:
    """What a policy sends for one call, and any summary call it made first."""

    messages: tuple[Message, ...]
    system: str
    summary_request: tuple[Message, ...] | None = None
    """Messages of the summary call made before this request (billed like any request)."""
    summary_output_tokens: int = 0
    reachable_refs: frozenset[int] = frozenset()
    """Planned-entry indices of tool results the request names by exact reference (Comal
    only): facts inside them count as reachable."""
    reachable_all: bool = False
    """The request holds an exact call listing every recorded result (Comal's evidence index):
    facts in any earlier tool output count as reachable."""
    actions: tuple[str, ...] = ()
    """Pressure actions taken before this request (`projection`, `checkpoint`), as counted in
    the report's `projections` and `derivations`."""


Measure = Callable[[Sequence[Message]], int]
"""Tokens of some messages in the canonical rendering (without the system prompt)."""


class Policy(Protocol):
    """A context strategy replayed call by call."""

    name: str

    def decide(self, history: tuple[Message, ...], call_index: int, /) -> Decision:
        """The request for call `call_index`, whose history is `history`."""
        ...


def _replace_results(
    history: tuple[Message, ...], keep: Callable[[int, ToolResultPart], str | None]
) -> tuple[Message, ...]:
    """Rewrite tool results: `keep(message_index, part)` returns new content or None (as is)."""
    out: list[Message] = []
    for index, message in enumerate(history):
        if message.role != "user" or not message.tool_results:
            out.append(message)
            continue
        parts = []
        changed = False
        for part in message.parts:
            if isinstance(part, ToolResultPart):
                content = keep(index, part)
                if content is not None and content != part.content:
                    part = replace(part, content=content, media=())
                    changed = True
            parts.append(part)
        out.append(Message("user", tuple(parts)) if changed else message)
    return tuple(out)


def _lines(text: str) -> int:
    return text.count("\n") + 1


@dataclass(slots=True)
class RawPolicy:
    """No context management: the whole history every call (the paper's "Raw Agent")."""

    system: str
    name: str = "raw"

    def decide(self, history: tuple[Message, ...], _call_index: int, /) -> Decision:
        """The history as is."""
        return Decision(history, self.system)


@dataclass(slots=True)
class LastObservationsPolicy:
    """SWE-agent `LastNObservations(n=5)`: all but the last 5 observations elided.

    Source: peers.md §2.7 (`sweagent/agent/history_processors.py`): "used in the original paper
    to elide but the last 5 observations"; elided content becomes
    `Old environment output: (N lines omitted)`. Every tool result is an observation here (the
    task is a user message, never elided). Default polling (1): the boundary moves every call.
    """

    system: str
    keep: int = 5
    name: str = "swe-agent-last5"
    _cache: dict[tuple[int, str], str] = field(default_factory=dict)

    def decide(self, history: tuple[Message, ...], _call_index: int, /) -> Decision:
        """Elide every observation older than the last `keep`."""
        ids = [p.call_id for m in history for p in m.tool_results]
        recent = set(ids[-self.keep :]) if self.keep else set()

        def keep(_: int, part: ToolResultPart) -> str | None:
            if part.call_id in recent:
                return None
            return f"Old environment output: ({_lines(part.content)} lines omitted)"

        return Decision(_replace_results(history, keep), self.system)


@dataclass(slots=True)
class ObservationMaskingPolicy:
    """Observation masking with a window of M = 10 turns.

    Source: "The Complexity Trap" (arXiv 2508.21433; peers.md §4): observations older than the
    last M = 10 turns are replaced by a placeholder, the agent's reasoning and actions are kept;
    OpenHands V0 `ObservationMaskingCondenser` does the same with `<MASKED>` (peers.md §2.4). A
    turn is one assistant message with its tool results.
    """

    system: str
    turns: int = 10
    name: str = "masking-m10"

    def decide(self, history: tuple[Message, ...], _call_index: int, /) -> Decision:
        """Mask results of turns older than the last `turns`."""
        assistant_at = [i for i, m in enumerate(history) if m.role == "assistant"]
        boundary = assistant_at[-self.turns] if len(assistant_at) >= self.turns else -1

        def keep(index: int, part: ToolResultPart) -> str | None:
            if index > boundary:
                return None
            return f"Old environment output: ({_lines(part.content)} lines omitted)"

        return Decision(_replace_results(history, keep), self.system)


@dataclass(slots=True)
class OpencodePrunePolicy:
    """opencode `prune`: protect the newest 40k tokens of tool output, clear older outputs.

    Source: peers.md §2.5 (`session/compaction.ts`): walking backwards, outputs beyond the first
    `PRUNE_PROTECT = 40_000` tokens are marked compacted, only if more than
    `PRUNE_MINIMUM = 20_000` tokens would be freed; the walk stops at an already compacted
    output; marked outputs read `[Old tool result content cleared]`. Checked before every call
    (the recorded SWE sessions have a single user turn, so opencode's "skip the last 2 user
    turns" rule would never let it act; it is not applied). No summary fallback: what prune
    cannot free overflows.
    """

    system: str
    measure: Measure
    protect: int = 40_000
    minimum: int = 20_000
    name: str = "opencode-prune"
    _pruned: set[str] = field(default_factory=set)

    def decide(self, history: tuple[Message, ...], _call_index: int, /) -> Decision:
        """Prune old outputs when it frees enough, then render."""
        total = 0
        candidates: list[str] = []
        freed = 0
        for message in reversed(history):
            if message.role != "user":
                continue
            for part in reversed(message.tool_results):
                if part.call_id in self._pruned:
                    break
                size = self.measure((Message("user", (part,)),))
                total += size
                if total > self.protect:
                    candidates.append(part.call_id)
                    freed += size
            else:
                continue
            break
        if freed > self.minimum:
            self._pruned.update(candidates)
        pruned = self._pruned

        def keep(_: int, part: ToolResultPart) -> str | None:
            return "[Old tool result content cleared]" if part.call_id in pruned else None

        return Decision(_replace_results(history, keep), self.system)


@dataclass(slots=True)
class LlmCompactionPolicy:
    """LLM compaction at a fraction of the usable window, with a 2,000-token summary billed.

    Sources: Codex CLI (peers.md §2.1): trigger at 90 % of the window, the new history is the
    newest *user* messages verbatim (up to 20,000 tokens) plus one user message holding the
    summary; assistant messages and tool items are dropped. Copilot CLI (peers.md §2.3): trigger
    at 80 %; its rebuilt history is not documented, so the Codex rebuild is used. The summary
    call sends the current request plus a summary instruction and is billed like any request;
    its 2,000 output tokens are billed at 5×. The summary text is a stand-in that carries no
    facts: a fact that survives only inside a summary is not in view.
    """

    system: str
    measure: Measure
    budget: Budget
    ratio: float
    name: str
    summary_text: str
    user_tokens: int = 20_000
    _base: tuple[Message, ...] = ()
    _cut: int = 0

    def _view(self, history: tuple[Message, ...]) -> tuple[Message, ...]:
        return self._base + history[self._cut :]

    def decide(self, history: tuple[Message, ...], _call_index: int, /) -> Decision:
        """Compact when the request would pass the threshold, then render."""
        view = self._view(history)
        if self.measure(view) <= self.ratio * self.budget.usable:
            return Decision(view, self.system)
        summary_request = (*view, Message("user", (TextPart(SUMMARY_PROMPT),)))
        kept: list[Message] = []
        spent = 0
        for message in reversed(self._user_messages(history)):
            size = self.measure((message,))
            if spent + size > self.user_tokens:
                break
            kept.append(message)
            spent += size
        summary = Message("user", (TextPart(SUMMARY_PREFIX + self.summary_text),))
        self._base = (*reversed(kept), summary)
        self._cut = len(history)
        return Decision(
            self._view(history),
            self.system,
            summary_request=summary_request,
            summary_output_tokens=SUMMARY_OUTPUT_TOKENS,
        )

    def _user_messages(self, history: tuple[Message, ...]) -> list[Message]:
        """User text messages (not tool results, not earlier summaries), oldest first."""
        out = []
        for message in history:
            texts = tuple(p for p in message.parts if isinstance(p, TextPart))
            if message.role == "user" and texts:
                out.append(Message("user", texts))
        return out


def summary_stand_in(count: Callable[[str], int], tokens: int = SUMMARY_OUTPUT_TOKENS) -> str:
    """A fact-free text of exactly `tokens` o200k tokens standing in for an LLM summary."""
    head = "[summary written by the model; its content is not replayed]"
    text = head + " summary" * max(0, tokens - count(head))
    while count(text) > tokens:
        text = text[: -len(" summary")]
    return text
