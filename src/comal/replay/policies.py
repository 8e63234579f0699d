"""Peers' context strategies, re-implemented from their documented behaviour.

Each policy turns the history before model call *k* into the messages of request *k*. Policies
keep state across calls (what was pruned or summarized stays so), like the agents they copy.
The output reserve at call *k* is sized from the outputs recorded before *k* only (`Budgets`):
no policy, and no overflow check, may look at the session's future.

Sources are `shared/research/peers.md` (sections named in each docstring), opencode's
`packages/opencode/src/session/compaction.ts` (`prune`), GitHub's Copilot CLI context-management
page, and the paper "The Complexity Trap" (Lindenbauer et al., arXiv 2508.21433).
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
    """The window and what a request leaves free in it at one call."""

    window: int
    reserve: int
    margin: int

    @property
    def usable(self) -> int:
        """What is left after the output reserve."""
        return self.window - self.reserve

    def overflows(self, request_tokens: int) -> bool:
        """True when request + reserve + margin exceed the window."""
        return request_tokens + self.reserve + self.margin > self.window

    def at(self, _call_index: int) -> Budget:
        """A fixed budget is the same at every call."""
        return self


@dataclass(frozen=True, slots=True)
class CallBudgets:
    """One budget per model call: the reserve of call *k* knows only the outputs before *k*."""

    window: int
    margin: int
    reserves: tuple[int, ...]

    def at(self, call_index: int) -> Budget:
        """The budget of call `call_index`."""
        return Budget(self.window, self.reserves[call_index], self.margin)


class Budgets(Protocol):
    """A fixed `Budget` or `CallBudgets`."""

    @property
    def window(self) -> int:
        """The window, in tokens."""
        ...

    def at(self, call_index: int, /) -> Budget:
        """The budget of one call."""
        ...


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
    reserve: int | None = None
    """The output reserve the policy itself held for this request (Comal: its engine's own);
    None: the harness's reserve for the call."""
    max_output: int | None = None
    """The most output tokens the policy asks the provider for (Comal: the request's
    `max_output_tokens`); None: whatever the window leaves beside the request (the peers send
    their model's maximum, so only the window can cut their replies)."""


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


PRUNE_PROTECT = 40_000
PRUNE_MINIMUM = 20_000
PRUNE_PROTECTED_TOOLS = frozenset({"skill"})
CHARS_PER_TOKEN = 4
"""opencode's `Token.estimate`: characters / 4, rounded."""


def opencode_estimate(text: str) -> int:
    """opencode's token estimate of a tool output (`util/token.ts`)."""
    return max(0, round(len(text) / CHARS_PER_TOKEN))


@dataclass(slots=True)
class OpencodePrunePolicy:
    """opencode `prune`, as `SessionCompaction.prune()` in `session/compaction.ts` does it.

    Walking the messages backwards, newest first: nothing is considered until two user turns
    have been passed (`if (turns < 2) continue`: the last two user turns are protected); the
    outputs of completed tool calls (not `skill`) are summed with opencode's estimate
    (characters / 4); those beyond the first `PRUNE_PROTECT = 40_000` tokens are candidates, and
    they are marked compacted only if more than `PRUNE_MINIMUM = 20_000` tokens would be freed;
    the walk stops at an output already compacted. Marked outputs read
    `[Old tool result content cleared]` (`message-v2.ts`). A user turn is a user message with
    text; tool results are not turns (opencode keeps them inside the assistant message).
    opencode runs prune when a prompt loop ends; checked here before every call, which prunes
    the same outputs (within a turn the outputs before the second-newest user message do not
    change). No summary fallback: what prune cannot free overflows.
    """

    system: str
    protect: int = PRUNE_PROTECT
    minimum: int = PRUNE_MINIMUM
    name: str = "opencode-prune"
    _pruned: set[str] = field(default_factory=set)

    def decide(self, history: tuple[Message, ...], _call_index: int, /) -> Decision:
        """Prune old outputs when it frees enough, then render."""
        total = 0
        freed = 0
        candidates: list[str] = []
        turns = 0
        stop = False
        for message in reversed(history):
            for part in reversed(message.parts):
                if isinstance(part, TextPart) and message.role == "user":
                    turns += 1
                    break
            if turns < 2 or message.role != "user":
                continue
            for part in reversed(message.tool_results):
                if part.name in PRUNE_PROTECTED_TOOLS:
                    continue
                if part.call_id in self._pruned:
                    stop = True
                    break
                size = opencode_estimate(part.content)
                total += size
                if total <= self.protect:
                    continue
                freed += size
                candidates.append(part.call_id)
            if stop:
                break
        if freed > self.minimum:
            self._pruned.update(candidates)
        pruned = self._pruned

        def keep(_: int, part: ToolResultPart) -> str | None:
            return "[Old tool result content cleared]" if part.call_id in pruned else None

        return Decision(_replace_results(history, keep), self.system)


@dataclass(slots=True)
class LlmCompactionPolicy:
    """LLM compaction at a threshold, with a 2,000-token summary billed.

    Thresholds, in the harness's tokens of the whole request (system prompt included):
    - Copilot CLI (`copilot_rule`): at 80 % of the window; its 20 % buffer holds the output
      reserve and margin ("Copilot CLI starts compacting at about 80 % of the context window,
      leaving a buffer of about 20 %"; GitHub Docs, Copilot CLI context management; peers.md
      §2.3). Copilot documents its rebuild as the summary with the original user instructions
      and the plan; the Codex rebuild below keeps the user messages, which holds both.
    - Codex CLI (`codex_rule`): at 90 % of the window less the output reserve
      (`auto_compact_token_limit` = 90 % of a `context_window` that excludes the model's
      output; `codex-rs/protocol/src/openai_models.rs`, peers.md §2.1). The new history is the
      newest *user* messages verbatim (up to 20,000 tokens) plus one user message holding the
      summary; assistant messages and tool items are dropped (`compact.rs`).
    The summary call sends the current request plus a summary instruction and is billed like
    any request; its 2,000 output tokens are billed at 5×; when it does not fit the window it
    counts as an overflow (Codex then trims and retries, Copilot blocks: either way the call as
    made did not fit). The summary text is a stand-in that carries no facts: a fact that
    survives only inside a summary is not in view.
    """

    system: str
    measure: Measure
    budgets: Budgets
    ratio: float
    name: str
    summary_text: str
    less_reserve: bool
    """Codex subtracts the output reserve from its threshold; Copilot's buffer holds it."""
    user_tokens: int = 20_000
    _base: tuple[Message, ...] = ()
    _cut: int = 0

    def _view(self, history: tuple[Message, ...]) -> tuple[Message, ...]:
        return self._base + history[self._cut :]

    def threshold(self, call_index: int) -> float:
        """Request tokens above which the peer compacts before call `call_index`."""
        budget = self.budgets.at(call_index)
        reserve = budget.reserve if self.less_reserve else 0
        return self.ratio * budget.window - reserve

    def decide(self, history: tuple[Message, ...], call_index: int, /) -> Decision:
        """Compact when the request would pass the threshold, then render."""
        view = self._view(history)
        if self.measure(view) <= self.threshold(call_index):
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
