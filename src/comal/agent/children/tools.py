"""The delegation tools: `Task`, `WorkStepRun` and `WorkDraft`, each running child sessions.

- `Task` (as in Claude Code): a description and a prompt → one child → its exact receipt.
  Several Task calls of one assistant message run together (`parallel`), each child under its
  own lock, at most `[agents] max_parallel` at a time.
- `WorkStepRun`: one board step in a child. The coordinator then runs the step's `check`
  itself; the step becomes `done` only when the child finished *and* the check passed — never
  on the child's word alone. A failing check (or no check) keeps the step open.
- `WorkDraft`: children draft the fragments of one artifact per the coordinator's plan; each
  fragment is a child's answer, verbatim; the coordinator assembles them in plan order and
  writes the file through the Write tool, with its durable preparation, as a call of its own
  (`<call id>/write`) recorded in the coordinator's ledger.

Every tool is `Rebuildable`: after a crash, recovery calls `rebuild`, which is `run` again —
safe because every effect is looked up first: a child with a receipt is read back (never run
again), an unfinished child resumes, a recorded write is not repeated, a started write is
settled by a fresh read: credited (`postcondition_observed`), written if the file still holds
exactly what its preparation read (an atomic rename that never happened), else uncertain.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from comal.agent.children.receipts import ChildReceipt, ChildTask
from comal.agent.core.recovery import preparation_of, settle_started
from comal.agent.core.session import Session
from comal.agent.core.toolset import LedgerBook
from comal.errors import ComalError, ToolError
from comal.ledger.entry import Entry
from comal.ledger.records import Kind, ToolResult, ToolStartedRecord
from comal.ledger.store import Ledger
from comal.messages import JSONObject, JSONValue, ToolCallPart, ToolSpec, digest_bytes
from comal.tools.base import (
    NoPreparation,
    Preparation,
    Tool,
    ToolContext,
    ToolOutcome,
    error_outcome,
    string_arg,
    text_outcome,
)
from comal.tools.board import apply_update, render_board
from comal.tools.finish import describe_check, run_check
from comal.tools.shell import MAX_TIMEOUT_S, BashTool

_BUDGET: JSONObject = {
    "tools": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Tools the child may use (default: the read-only ones; never more than"
        " yours).",
    },
    "max_turns": {"type": "integer", "minimum": 1, "description": "Model calls allowed."},
    "max_tokens": {"type": "integer", "minimum": 1, "description": "Tokens allowed."},
}

TASK_SPEC = ToolSpec(
    name="Task",
    description=(
        "Delegate a self-contained task to a child session with its own context window. The"
        " child sees only your prompt, works with read-only tools unless you list others, and"
        " returns its final answer verbatim with the refs of the results it recorded (readable"
        " with EvidenceRead). Several Task calls in one message run in parallel."
    ),
    parameters={
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "A few words: what the child does."},
            "prompt": {"type": "string", "description": "The complete task for the child."},
            **_BUDGET,
        },
        "required": ["description", "prompt"],
        "additionalProperties": False,
    },
)

STEP_SPEC = ToolSpec(
    name="WorkStepRun",
    description=(
        "Run one board step in a child session with its own context window. The child gets the"
        " step's text (and your prompt) and your tools unless you list fewer; when it answers,"
        " Comal runs the step's check command and marks the step done only if the child"
        " finished and the check passed. A failing check keeps the step open."
    ),
    parameters={
        "type": "object",
        "properties": {
            "step": {"type": "string", "description": "The board criterion id."},
            "prompt": {"type": "string", "description": "Extra instructions for the child."},
            **_BUDGET,
        },
        "required": ["step"],
        "additionalProperties": False,
    },
)

DRAFT_SPEC = ToolSpec(
    name="WorkDraft",
    description=(
        "Draft one file in fragments, one child session per fragment (in parallel), then write"
        " it: the fragments' texts, verbatim and in the order given, joined by `joiner`"
        " (default a blank line), become the file at `path` through Write."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to write."},
            "fragments": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Stable fragment id."},
                        "prompt": {"type": "string", "description": "What to draft."},
                    },
                    "required": ["id", "prompt"],
                    "additionalProperties": False,
                },
            },
            "joiner": {"type": "string", "description": "Text between fragments."},
            **_BUDGET,
        },
        "required": ["path", "fragments"],
        "additionalProperties": False,
    },
)


def _budget(arguments: JSONObject) -> tuple[tuple[str, ...] | None, int | None, int | None]:
    tools = arguments.get("tools")
    names = tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else None
    turns, tokens = arguments.get("max_turns"), arguments.get("max_tokens")
    return (
        names,
        turns if isinstance(turns, int) else None,
        tokens if isinstance(tokens, int) else None,
    )


class Delegation(Protocol):
    """What the tools ask of the coordinator that runs their children (`run.Delegation`)."""

    ledger: Ledger
    base_tools: list[Tool]
    """The tools offered to the coordinator."""

    @property
    def session(self) -> Session:
        """The coordinating session."""
        ...

    def occurrence(self, call_id: str) -> int:
        """Which use of `call_id` in the coordinator the running call is."""
        ...

    async def run(self, call_id: str, task: ChildTask) -> ChildReceipt:
        """Run (or resume, or read back) the child of `call_id` and return its receipt."""
        ...


class _DelegationTool(NoPreparation):
    """What the three tools share: the coordinator, no path, rebuild = run."""

    read_only = True
    """They change nothing themselves: each child's calls (and WorkDraft's Write) are
    authorized on their own by the coordinator's permission policy."""

    def __init__(self, delegation: Delegation) -> None:
        self.delegation = delegation

    def target(self, arguments: JSONObject) -> str | None:  # noqa: ARG002 - protocol
        """No path or command to match rules on."""
        return None

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:  # noqa: ARG002 - protocol
        """The call itself touches no file."""
        return ()

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,
        preparation: Preparation | None,  # noqa: ARG002 - protocol
    ) -> ToolOutcome:
        """Run the call; bad input and refused tools become error results."""
        try:
            return await self._run(arguments, ctx)
        except ComalError as exc:
            return error_outcome(f"{self.spec.name} not run: {exc.message}")

    async def rebuild(self, arguments: JSONObject, ctx: ToolContext) -> ToolOutcome:
        """Finish an interrupted call from the ledger (every effect is looked up first)."""
        return await self.run(arguments, ctx, None)

    spec: ToolSpec

    async def _run(self, arguments: JSONObject, ctx: ToolContext) -> ToolOutcome:
        raise NotImplementedError


class TaskTool(_DelegationTool):
    """`Task`: one child, one receipt."""

    spec = TASK_SPEC
    parallel = True
    """Consecutive Task calls of one message run together."""

    async def _run(self, arguments: JSONObject, ctx: ToolContext) -> ToolOutcome:
        tools, turns, tokens = _budget(arguments)
        task = ChildTask(
            "task",
            string_arg(arguments, "description"),
            string_arg(arguments, "prompt"),
            tools,
            turns,
            tokens,
        )
        receipt = await self.delegation.run(ctx.call_id, task)
        text = receipt.render()
        return text_outcome(text) if receipt.finished else error_outcome(text)


class WorkStepRunTool(_DelegationTool):
    """`WorkStepRun`: a board step in a child, judged by its check."""

    spec = STEP_SPEC

    def __init__(self, delegation: Delegation, timeout_s: float = MAX_TIMEOUT_S) -> None:
        super().__init__(delegation)
        self._shell = BashTool(default_timeout_s=timeout_s, max_timeout_s=timeout_s)

    def _set_status(self, book: LedgerBook, step: str, status: str) -> None:
        board = list(book.board())
        current = next(c for c in board if c.id == step)
        if current.status != status:
            book.record_board(tuple(apply_update(board, [{"id": step, "status": status}])))

    async def _run(self, arguments: JSONObject, ctx: ToolContext) -> ToolOutcome:
        step = string_arg(arguments, "step")
        book = LedgerBook(self.delegation.ledger, self.delegation.session.id)
        criterion = next((c for c in book.board() if c.id == step), None)
        if criterion is None:
            known = ", ".join(c.id for c in book.board()) or "none"
            raise ToolError(f"no board step {step!r} (ids: {known}); set the board first")
        extra = arguments.get("prompt")
        check = (
            f"Acceptance: when you answer, the coordinator runs `{criterion.check}`; it must"
            " exit 0."
            if criterion.check
            else "Acceptance: the coordinator verifies the step after you answer."
        )
        prompt = f"Board step {criterion.id}: {criterion.text}\n{check}"
        if isinstance(extra, str) and extra:
            prompt += f"\n\n{extra}"
        tools, turns, tokens = _budget(arguments)
        if tools is None:  # a step does work: the coordinator's own tools, under its policy
            tools = tuple(t.spec.name for t in self.delegation.base_tools)
        self._set_status(book, step, "in_progress")
        task = ChildTask("step", f"step {step}", prompt, tools, turns, tokens)
        receipt = await self.delegation.run(ctx.call_id, task)
        lines = [receipt.render(), ""]
        status = "in_progress"
        if not receipt.finished:
            lines.append(f"The child did not finish ({receipt.status}); the step stays open.")
        elif criterion.check is None:
            lines.append(
                "The step has no check command, so the child's answer alone cannot close it: the"
                " step stays in_progress. Verify it yourself and update the board."
            )
        else:
            run = await run_check(self._shell, criterion.check, f"criterion {step}", ctx)
            lines.append(describe_check(run))
            if run.passed:
                status = "done"
            else:
                lines += [run.output, "The check failed; the step stays open."]
        self._set_status(book, step, status)
        lines += ["", render_board(book.board())]
        text = "\n".join(lines)
        return text_outcome(text) if status == "done" else error_outcome(text)


def _fragments(arguments: JSONObject) -> list[tuple[str, str]]:
    raw: JSONValue = arguments.get("fragments")
    if not isinstance(raw, list) or not raw:
        raise ToolError("fragments must be a non-empty list of {id, prompt}")
    out: list[tuple[str, str]] = []
    for index, item in enumerate(raw):
        ident = item.get("id") if isinstance(item, dict) else None
        prompt = item.get("prompt") if isinstance(item, dict) else None
        if not isinstance(ident, str) or not ident or not isinstance(prompt, str):
            raise ToolError(f"fragments[{index}] needs a non-empty id and a prompt")
        if any(ident == seen for seen, _ in out):
            raise ToolError(f"fragment id {ident!r} is used twice")
        out.append((ident, prompt))
    return out


def assemble(answers: Sequence[str], joiner: str) -> str:
    """The artifact: each fragment verbatim (ending in one newline), in plan order."""
    return joiner.join(a if a.endswith("\n") else a + "\n" for a in answers)


class WorkDraftTool(_DelegationTool):
    """`WorkDraft`: fragments by children, one file written by the coordinator."""

    spec = DRAFT_SPEC

    async def _run(self, arguments: JSONObject, ctx: ToolContext) -> ToolOutcome:
        path = string_arg(arguments, "path")
        joiner = string_arg(arguments, "joiner", "\n")
        plan = _fragments(arguments)
        tools, turns, tokens = _budget(arguments)
        outline = "\n".join(f"- {ident}" for ident, _ in plan)
        tasks = [
            ChildTask(
                "draft",
                f"fragment {ident} of {path}",
                f"Draft fragment {ident!r} of {path}. The plan's fragments, in order:\n"
                f"{outline}\n\nYour fragment: {prompt}",
                tools,
                turns,
                tokens,
                key=ident,
            )
            for ident, prompt in plan
        ]
        receipts = await asyncio.gather(*(self.delegation.run(ctx.call_id, t) for t in tasks))
        lines = [
            f"fragment {ident}: {r.header()} · {len(r.answer):,} chars ·"
            f" {digest_bytes(r.answer.encode('utf-8', 'surrogatepass'))}"
            for (ident, _), r in zip(plan, receipts, strict=True)
        ]
        unfinished = [r for r in receipts if not r.finished]
        if unfinished:
            lines.append(f"{len(unfinished)} fragments did not finish; {path} was not written.")
            lines += [r.render() for r in unfinished]
            return error_outcome("\n".join(lines))
        content = assemble([r.answer for r in receipts], joiner)
        status, detail = await self._write(ctx.call_id, path, content)
        lines.append(f"{path}: {status} — {detail}")
        text = "\n".join(lines)
        written = status in ("ok", "postcondition_observed")
        return text_outcome(text) if written else error_outcome(text)

    async def _write(self, call_id: str, path: str, content: str) -> tuple[str, str]:
        """Write the artifact once, as the call `<call_id>/write` of the coordinator
        (`<call_id>/write/<n>` for the n-th reuse of a call id): (status of its result, what
        happened)."""
        session = self.delegation.session
        occurrence = self.delegation.occurrence(call_id)
        write_id = f"{call_id}/write" + (f"/{occurrence}" if occurrence else "")
        call = ToolCallPart(write_id, "Write", {"path": path, "content": content})
        size = f"{len(content.encode('utf-8', 'surrogatepass')):,} bytes"
        started = None
        for entry in session.ledger.entries(
            session.id, kinds=(Kind.TOOL_STARTED, Kind.TOOL_RESULT)
        ):
            record = (
                ToolResult if entry.kind == Kind.TOOL_RESULT else ToolStartedRecord
            ).from_entry(entry)
            if record.call_id != call.call_id:
                continue
            if isinstance(record, ToolResult):
                status = str(record.status)
                return status, f"{size}; its result is recorded ({entry.id}), not written again"
            started = entry
        if started is not None and not _untouched(session, started):
            # Started, no result: credited by a fresh read, or held uncertain; never repeated.
            recovered = await settle_started(session, call, started)
            return recovered.status, recovered.detail
        receipt = await session.run_call(call)
        again = "" if started is None else " (the earlier start never reached the file)"
        return receipt.status, f"{size} written through Write{again}"


def _untouched(session: Session, started: Entry) -> bool:
    """Whether a started write provably had no effect: the file still holds exactly the
    content its preparation read (absent then and now). Write replaces a file by an atomic
    rename, so a file unchanged since the preparation was never written; the artifact's bytes
    are fixed by the children's receipts, so writing it now is its first write."""
    prep = preparation_of(started)
    adapter = session.runner.registry.recovery("Write")
    if prep is None or adapter is None:
        return False
    seen = adapter.observe(prep, session.runner.context)
    return seen.readable and not seen.matches_intended and seen.current_digest == prep.digest_before


def delegation_tools(delegation: Delegation, offer: Sequence[str]) -> list[Tool]:
    """The delegation tools named in `offer`, bound to `delegation`."""
    made: dict[str, Tool] = {
        "Task": TaskTool(delegation),
        "WorkStepRun": WorkStepRunTool(delegation),
        "WorkDraft": WorkDraftTool(delegation),
    }
    return [made[name] for name in offer if name in made]
