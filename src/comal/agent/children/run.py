"""Child sessions (sub-agents): their own ledger session, context engine and window.

A coordinator's call (Task, WorkStepRun, WorkDraft) runs one or more children. Each child is a
ledger session whose `parent_id` is the coordinator and whose `session.started` names the call
that started it (`origin.parent_call`, the link the Claude Code importer writes for imported
sub-agents). Its id is derived from (parent, call id, key), so a resumed coordinator finds the
same child instead of starting another.

A child gets a task (one recorded user message), a tool subset — read-only by default; a tool
the coordinator was not offered is never given, and the coordinator's permission policy still
decides every call — and a budget (model calls, tokens). Its last answer comes back as an
exact **receipt** (`child.receipt`, the child's last entry): the answer verbatim, the status
(`finished`, `budget_exhausted`, `failed`), the usage and the refs of every result it recorded.

Invariants:
- a child with a receipt is never run again: the receipt is read back byte for byte;
- a child without one resumes by the rules of any session (`recover`, then the loop if the
  ledger says a model call is due); an imported child with an answer gets its receipt from it;
- a child holds its own lock while it runs; children of one coordinator run at most
  `[agents] max_parallel` at a time;
- a child's events reach the front end wrapped in `ChildActivity` with the child's id.

The receipt's shape and how a call finds its child live in `agent.receipts`.
"""

from __future__ import annotations

import asyncio

from comal.agent.children.receipts import (
    ChildReceipt,
    ChildTask,
    child_session_id,
    find_child,
    recorded_receipt,
)
from comal.agent.children.tools import delegation_tools
from comal.agent.core.events import AgentEvent, ChildActivity, ChildFinished, ChildStarted
from comal.agent.core.loop import run_turn
from comal.agent.core.recovery import recover
from comal.agent.core.session import Session, SessionOptions, open_session
from comal.config import Config
from comal.errors import BudgetError, ComalError, StepLimitError, ToolError
from comal.ledger.records import (
    ChildOrigin,
    Kind,
    RecordedWindow,
    SessionStarted,
    ToolResult,
    UserMessage,
    WarningRecord,
)
from comal.ledger.store import Ledger
from comal.messages import message_to_json, user_text
from comal.providers.base import Provider
from comal.session import (
    PAIRING_KINDS,
    RECEIPT_KIND,
    call_occurrence,
    index_status,
    last_answer,
    usage_totals,
)
from comal.tools.base import Tool

__all__ = [
    "DELEGATION_TOOLS",
    "RECEIPT_KIND",
    "ChildReceipt",
    "ChildTask",
    "Delegation",
    "child_session_id",
    "find_child",
]

CHILD_SOURCE = "comal:child"
"""The `source` of a child session Comal started."""
DELEGATION_TOOLS = ("Task", "WorkStepRun", "WorkDraft")
"""Tools that start children; a child is offered one only when its task asks for it."""
DELEGATION_MIN_WINDOW = 16_384
"""Below this window, the delegation schemas (~770 tokens on every request) are not offered
unless `[agents] enabled = true`: a small local window needs that room for the conversation."""


def offers_delegation(config: Config, window: int) -> bool:
    """Whether a top-level session offers Task, WorkStepRun and WorkDraft (`[agents] enabled`)."""
    if config.agents.enabled is not None:
        return config.agents.enabled
    return window >= DELEGATION_MIN_WINDOW


TASK_MESSAGE = (
    "[Comal] You are a child session started by a coordinating session for one task"
    " ({description}). You have your own context window; the coordinator sees only your final"
    " message, exactly as you write it, with the refs of the results you recorded.\n\n"
    "{prompt}\n\n"
    "{ending}"
)
ENDINGS = {
    "task": "Work only on this task, then answer with a final message that has no tool call.",
    "step": (
        "Do this step only. The coordinator runs the step's check itself after you answer; your"
        " final message (no tool call) says what you did."
    ),
    "draft": (
        "Your final message (no tool call) is the fragment itself, verbatim: write only its text,"
        " with no preamble; the coordinator assembles the fragments into one file."
    ),
}


class Delegation:
    """Starts and resumes the children of one coordinating session (its `BoundTools`).

    Args:
        ledger: the open ledger.
        config: the configuration (`[agents]` limits, permissions, checks).
        provider: the provider children talk to (the coordinator's).
        tools: the tools offered to the coordinator (a child's subset comes from these).
        options: the coordinator's options (front end, cancel, confirmations).
        offer: the delegation tools this session offers (a child's come from its task).
    """

    def __init__(
        self,
        ledger: Ledger,
        config: Config,
        provider: Provider,
        tools: list[Tool],
        options: SessionOptions,
        offer: tuple[str, ...] = DELEGATION_TOOLS,
    ) -> None:
        self.ledger = ledger
        self.config = config
        self.provider = provider
        self.base_tools = tools
        self.options = options
        self.offer = offer
        self._slots = asyncio.Semaphore(config.agents.max_parallel)
        self._session: Session | None = None

    def tools(self, session_id: str) -> list[Tool]:  # noqa: ARG002 - BoundTools protocol
        """The delegation tools, bound to this coordinator."""
        return delegation_tools(self, self.offer)

    def attach(self, session: Session) -> None:
        """Remember the coordinator once it is open."""
        self._session = session

    @property
    def session(self) -> Session:
        """The coordinating session.

        Raises:
            RuntimeError: used before the session was opened.
        """
        if self._session is None:
            raise RuntimeError("the delegation tools were used before their session opened")
        return self._session

    def child_tools(self, names: tuple[str, ...] | None) -> tuple[list[Tool], tuple[str, ...]]:
        """The tools a child gets (never more than the coordinator's) and the delegation
        tools it may offer in turn.

        Raises:
            ToolError: a requested tool the coordinator does not have.
        """
        registry = self.session.runner.registry
        own = {"EvidenceRead", "Board", "finish_call", *DELEGATION_TOOLS}
        if names is None:
            chosen = [t for t in self.base_tools if t.read_only and t.spec.name not in own]
            return chosen, ()
        missing = [n for n in names if registry.get(n) is None]
        if missing:
            offered = ", ".join(registry.names())
            raise ToolError(
                f"a child cannot be given {', '.join(missing)}: the coordinator has only {offered}"
            )
        chosen = [t for t in self.base_tools if t.spec.name in names and t.spec.name not in own]
        return chosen, tuple(n for n in DELEGATION_TOOLS if n in names)

    async def run(self, call_id: str, task: ChildTask) -> ChildReceipt:
        """Run (or resume, or read back) the child of `call_id` and return its receipt."""
        parent = self.session
        occurrence = self.occurrence(call_id)
        child_id = find_child(self.ledger, parent.id, call_id, task.key, occurrence)
        if child_id is not None:
            receipt = recorded_receipt(self.ledger, child_id)
            if receipt is not None:
                self._settle_status(receipt)
                self._finished(receipt)
                return receipt
        tools, offer = self.child_tools(task.tools)
        async with self._slots:
            return await self._run(call_id, task, child_id, occurrence, tools, offer)

    def occurrence(self, call_id: str) -> int:
        """Which use of `call_id` in the coordinator the running call is
        (`pairing.call_occurrence`): a reused id starts new children, never reads back old."""
        entries = self.ledger.entries(self.session.id, kinds=PAIRING_KINDS)
        return call_occurrence(entries, call_id)

    def _create(self, call_id: str, task: ChildTask, occurrence: int) -> str:
        parent = self.session
        child_id = child_session_id(parent.id, call_id, task.key, occurrence)
        self.ledger.create_session(
            cwd=str(parent.runner.context.workspace),
            model=self.provider.model,
            title=task.description[:120],
            source=CHILD_SOURCE,
            parent_id=parent.id,
            session_id=child_id,
        )
        return child_id

    def _start(self, child_id: str, call_id: str, task: ChildTask) -> None:
        """Append `session.started` (with the link to the call) unless it is recorded."""
        if self.ledger.entries(child_id, kinds=(Kind.SESSION_STARTED,)):
            return
        caps = self.provider.capabilities
        started = SessionStarted(
            cwd=str(self.session.runner.context.workspace),
            provider=self.provider.name,
            wire=str(self.provider.wire),
            model=self.provider.model,
            window=RecordedWindow(caps.context_window, caps.window_source),
            source=CHILD_SOURCE,
            origin=ChildOrigin(self.session.id, call_id, task.kind, task.key),
            task={
                "description": task.description,
                "tools": None if task.tools is None else list(task.tools),
                "max_turns": task.max_turns,
                "max_tokens": task.max_tokens,
            },
        )
        self.ledger.append_record(child_id, started)

    def _options(self, child_id: str, call_id: str, task: ChildTask) -> SessionOptions:
        relay = self.options.emit

        def emit(event: AgentEvent) -> None:
            relay(ChildActivity(child_id, call_id, event))

        agents = self.config.agents
        return SessionOptions(
            max_turns=task.max_turns or agents.max_turns,
            interactive=self.options.interactive,
            reasoning_effort=self.options.reasoning_effort,
            max_output_tokens=self.options.max_output_tokens,
            emit=emit,
            ask=self.options.ask,
            cancel=self.options.cancel,
            max_tokens=task.max_tokens or agents.max_tokens,
        )

    async def _run(
        self,
        call_id: str,
        task: ChildTask,
        child_id: str | None,
        occurrence: int,
        tools: list[Tool],
        offer: tuple[str, ...],
    ) -> ChildReceipt:
        child_id = child_id or self._create(call_id, task, occurrence)
        self._start(child_id, call_id, task)
        options = self._options(child_id, call_id, task)
        bound = Delegation(self.ledger, self.config, self.provider, tools, options, offer)
        child = open_session(
            self.ledger,
            self.config,
            self.provider,
            tools,
            options,
            session_id=child_id,
            child=True,
            bound=bound if offer else None,
        )
        self.session.emit(
            ChildStarted(
                child_id,
                self.session.id,
                call_id,
                task.description,
                self.provider.capabilities.context_window,
            )
        )
        try:
            status, reason, answer = await _drive(child, task)
        except asyncio.CancelledError:
            index_status(self.ledger, child_id, running=False)
            raise
        finally:
            self.ledger.release_lock(child_id)
        entries = self.ledger.entries(child_id)
        totals = usage_totals(entries)
        receipt = ChildReceipt(
            child_id,
            call_id,
            status,
            answer,
            reason,
            totals.measured,
            totals.requests,
            tuple(
                (e.id, ToolResult.from_entry(e).name or "")
                for e in entries
                if e.kind == Kind.TOOL_RESULT
            ),
        )
        # The receipt first, then the status row: the row follows the data, never the reverse.
        self.ledger.append_record(child_id, receipt.to_record())
        self._settle_status(receipt)
        self._finished(receipt)
        return receipt

    def _settle_status(self, receipt: ChildReceipt) -> None:
        """Index the child's status, which its receipt settles (also a receipt read back after
        a crash that came between the receipt and the row)."""
        index_status(self.ledger, receipt.session_id, running=False)

    def _finished(self, receipt: ChildReceipt) -> None:
        self.session.emit(
            ChildFinished(
                receipt.session_id,
                self.session.id,
                receipt.call_id,
                receipt.status,
                receipt.usage.total_input,
                receipt.usage.output,
                receipt.rebuilt,
            )
        )


async def _drive(child: Session, task: ChildTask) -> tuple[str, str, str]:
    """Run a child to its answer: (status, reason, answer)."""
    entries = child.ledger.entries(child.id, kinds=(Kind.MESSAGE_USER,))
    try:
        if not entries:
            text = TASK_MESSAGE.format(
                description=task.description, prompt=task.prompt, ending=ENDINGS[task.kind]
            )
            child.write(UserMessage(message_to_json(user_text(text))))
            return "finished", "", await run_turn(child, None)
        # Started before this process: resume it like any session.
        report = await recover(child, continue_plan=False)
        if not report.needs_model_call:
            return "finished", "", report.last_answer or ""
        return "finished", "", await run_turn(child, None)
    except (StepLimitError, BudgetError) as exc:
        answer = last_answer(child.ledger.entries(child.id)) or ""
        return "budget_exhausted", exc.message, answer
    except ComalError as exc:
        child.write(WarningRecord(exc.code, exc.message))
        answer = last_answer(child.ledger.entries(child.id)) or ""
        return "failed", f"{exc.code}: {exc.message}", answer
