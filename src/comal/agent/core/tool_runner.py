"""Running one tool call with write-ahead receipts.

Order of effects, each step durable before the next:
1. permission decision (and, for Write/Edit, the preparation: path, digest before, digest intended);
2. `tool.started` with both — before the tool touches anything;
3. the tool runs;
4. `tool.result` with the exact output bytes as a blob.
A call that is denied, unknown, or has invalid arguments still gets `tool.started` and a
`tool.result`, so the model always sees exactly one result per call and the ledger shows why.

Insistence guard: a (tool, arguments) pair whose earlier result is `uncertain` (held by
recovery) is not run again unless the user confirms it (`confirm` hook, interactive only);
headless, the re-issue is refused with a receipt that names the uncertain result. Read-only
tools are exempt: repeating them cannot duplicate an effect.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from dataclasses import replace

from comal.agent.core.events import ToolFinished
from comal.agent.features.hooks import Hooks, claude_tool_input, tool_response
from comal.errors import ComalError, ToolError
from comal.ledger.records import (
    Record,
    RecordedMedia,
    RecordedPermission,
    RecordedPreparation,
    ToolResult,
    ToolStartedRecord,
)
from comal.messages import (
    JSONObject,
    MediaPart,
    ToolCallPart,
    canonical_json,
    digest_bytes,
)
from comal.tools.base import (
    PermissionDecision,
    Preparation,
    Rebuildable,
    Tool,
    ToolContext,
    ToolOutcome,
    ToolRegistry,
    render_outcome,
    validate_arguments,
)
from comal.tools.permissions import PermissionPolicy

RecordFn = Callable[[Record, bytes | None], None]
"""Appends one ledger entry: `record(record, body)` (`Ledger.append_record`)."""

ConfirmFn = Callable[[str, JSONObject, str], Awaitable[bool]]
"""`(tool_name, arguments, reason) -> confirmed`: asks the user (interactive front ends only)."""

REPEAT_MODE = "uncertain-repeat"
"""Permission mode recorded for a decision of the insistence guard."""


CallReceipt = ToolFinished
"""What the runner recorded for one call: the very event the front end is told of it."""


def _preparation_json(prep: Preparation) -> RecordedPreparation:
    return RecordedPreparation(
        prep.path, prep.abs_path, prep.digest_before, prep.digest_intended, prep.intent
    )


def _decision_json(decision: PermissionDecision) -> RecordedPermission:
    return RecordedPermission(decision.decision, decision.mode, decision.reason)


def _denied(decision: PermissionDecision) -> ToolOutcome:
    return ToolOutcome(
        output=f"permission denied: {decision.reason}".encode(), is_error=True, status="denied"
    )


def media_json(media: tuple[MediaPart, ...]) -> tuple[RecordedMedia, ...]:
    """Media of a result as recorded: type, bytes (base64), size and digest of the bytes."""
    out: list[RecordedMedia] = []
    for m in media:
        raw = base64.b64decode(m.data_b64)
        out.append(
            RecordedMedia(
                m.media_type, data_b64=m.data_b64, size_bytes=len(raw), digest=digest_bytes(raw)
            )
        )
    return tuple(out)


def call_key(name: str, arguments: JSONObject) -> str:
    """Identity of a call for the insistence guard: tool name plus canonical arguments."""
    return f"{name}\x00{canonical_json(arguments)}"


def call_summary(call: ToolCallPart) -> str:
    """A one-line description of a call for front ends."""
    for key in ("command", "path", "pattern", "ref"):
        value = call.arguments.get(key)
        if isinstance(value, str):
            return f"{call.name} {value[:120]}"
    return call.name


class ToolRunner:
    """Executes calls against a registry, appending receipts through `record`.

    Args:
        registry: the tools offered to the model.
        permissions: the permission policy of this process.
        context: the tool context (workspace, env, cancel event).
        record: appends one ledger record (with its body) and returns nothing.
        confirm: asks the user before an identical re-issue of an uncertain call; None (or a
            headless context) refuses such re-issues.
        observed: tools whose interrupted calls a plugin's recovery adapter settles by a
            fresh observation (a cancelled one with a preparation is left to recovery).
        hooks: the session's hooks (PreToolUse, PostToolUse), if any.
        redact: applied to every output before it is recorded or shown to a hook (the
            session's secrets).
    """

    def __init__(
        self,
        registry: ToolRegistry,
        permissions: PermissionPolicy,
        context: ToolContext,
        record: RecordFn,
        confirm: ConfirmFn | None = None,
        observed: frozenset[str] = frozenset(),
        hooks: Hooks | None = None,
        redact: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self.registry = registry
        self._redact = redact
        self.hooks = hooks
        self.feedback: list[str] = []
        """What PostToolUse hooks asked to tell the model; the loop sends it after the results."""
        self.permissions = permissions
        self.context = context
        self._record = record
        self._confirm = confirm
        self._observed = observed
        self._uncertain: dict[str, str] = {}

    def hold_uncertain(self, name: str, arguments: JSONObject, result_id: str) -> None:
        """Guard (name, arguments): its result `result_id` is uncertain."""
        self._uncertain[call_key(name, arguments)] = result_id

    def release_uncertain(self, name: str, arguments: JSONObject) -> None:
        """Stop guarding (name, arguments) (the user confirmed a repeat)."""
        self._uncertain.pop(call_key(name, arguments), None)

    @property
    def held_uncertain(self) -> int:
        """How many uncertain calls the guard holds."""
        return len(self._uncertain)

    async def _repeat_allowed(self, call: ToolCallPart, result_id: str) -> PermissionDecision:
        reason = (
            f"{call.name} with these exact arguments was interrupted earlier and its effect is "
            f"uncertain (result {result_id}); Comal does not repeat it on its own"
        )
        if self.context.interactive and self._confirm is not None:
            if await self._confirm(call.name, call.arguments, reason):
                self.release_uncertain(call.name, call.arguments)
                return PermissionDecision("allow", REPEAT_MODE, f"confirmed by the user: {reason}")
            return PermissionDecision("deny", REPEAT_MODE, f"declined by the user: {reason}")
        return PermissionDecision(
            "deny",
            REPEAT_MODE,
            f"{reason}. Headless runs never repeat an uncertain call: check the current state "
            "(read the files or outputs it would change) and continue from what you observe, "
            "or ask the user to confirm the repeat interactively",
        )

    def _started(
        self,
        call: ToolCallPart,
        decision: PermissionDecision,
        preparation: Preparation | None = None,
    ) -> None:
        started = ToolStartedRecord(
            call.call_id,
            call.name,
            call.arguments,
            _decision_json(decision),
            None if preparation is None else _preparation_json(preparation),
        )
        # The bytes before the change, kept as the entry's body: what a rewind restores.
        body = None if preparation is None else preparation.before
        self._record(started, body)

    def _result(self, call: ToolCallPart, outcome: ToolOutcome) -> CallReceipt:
        if self._redact is not None:
            # A key a command printed (`env`) never reaches the ledger.
            outcome = replace(outcome, output=self._redact(outcome.output))
        cut = outcome.cut
        result = ToolResult.for_output(
            call.call_id,
            call.name,
            outcome.output,
            status=outcome.status,
            is_error=outcome.is_error,
            exit_code=outcome.exit_code,
            media=media_json(outcome.media) if outcome.media else None,
            observed=outcome.observed,
            cut=None
            if cut is None
            else {"limit_bytes": cut.limit_bytes, "total_bytes": cut.total_bytes},
        )
        self._record(result, outcome.output)
        text = render_outcome(
            ToolOutcome(outcome.output[:400], outcome.is_error, outcome.exit_code)
        )
        return CallReceipt(
            call.call_id, call.name, outcome.status, outcome.exit_code, len(outcome.output), text
        )

    def record_result(self, call: ToolCallPart, outcome: ToolOutcome) -> CallReceipt:
        """Record the result of a call finished outside `run` (recovery's rebuilds)."""
        return self._result(call, outcome)

    def context_for(self, call: ToolCallPart) -> ToolContext:
        """The tool context of one call (the session's, naming the call)."""
        return replace(self.context, call_id=call.call_id)

    def refuse(self, call: ToolCallPart, reason: str, *, mode: str = "policy") -> CallReceipt:
        """Record a call that will not run (no tool effect), with a clear error result."""
        decision = PermissionDecision("deny", mode, reason)
        self._started(call, decision)
        return self._result(
            call, ToolOutcome(output=reason.encode(), is_error=True, status="denied")
        )

    async def run(self, call: ToolCallPart) -> CallReceipt:
        """Run one call end to end and return its receipt."""
        if call.invalid is not None:
            return self._fail_early(call, f"arguments were not valid JSON: {call.invalid.error}")
        tool = self.registry.get(call.name)
        if tool is None:
            known = ", ".join(s.name for s in self.registry.specs())
            return self._fail_early(call, f"unknown tool {call.name!r}; available: {known}")
        problem = validate_arguments(tool.spec, call.arguments)
        if problem is not None:
            return self._fail_early(call, problem)
        if self.hooks is not None and self.hooks.configured("PreToolUse"):
            verdict = await self.hooks.run("PreToolUse", self._hook_fields(call), call.name)
            if verdict.blocked:
                return self.refuse(
                    call, f"blocked by a PreToolUse hook: {verdict.reason}", mode="hook"
                )
        held = self._uncertain.get(call_key(call.name, call.arguments))
        if held is not None and not tool.read_only:
            repeat = await self._repeat_allowed(call, held)
            if not repeat.allowed:
                return self.refuse(call, f"not run: {repeat.reason}", mode=REPEAT_MODE)
        decision = await self._authorize(tool, call)
        if decision.decision != "allow":
            self._started(call, decision)
            return self._result(call, _denied(decision))
        context = self.context_for(call)
        try:
            preparation = await tool.prepare(call.arguments, context)
        except ComalError as exc:
            self._started(call, decision)
            return self._result(
                call, ToolOutcome(output=exc.message.encode(), is_error=True, status="error")
            )
        moved = self._moved(tool, call, decision, preparation)
        if moved is not None:
            self._started(call, decision)
            return self._result(call, ToolOutcome(moved.encode(), is_error=True, status="error"))
        self._started(call, decision, preparation)
        outcome = await self._execute(tool, call, context, preparation)
        receipt = self._result(call, outcome)
        if self.hooks is not None and self.hooks.configured("PostToolUse"):
            fields = self._hook_fields(call)
            fields["tool_response"] = tool_response(
                outcome.output, outcome.is_error, outcome.exit_code
            )
            verdict = await self.hooks.run("PostToolUse", fields, call.name)
            if verdict.blocked:
                self.feedback.append(
                    f"PostToolUse hook on {call.name} ({call.call_id}): {verdict.reason}"
                )
        return receipt

    def _moved(
        self,
        tool: Tool,
        call: ToolCallPart,
        decision: PermissionDecision,
        preparation: Preparation | None,
    ) -> str | None:
        """Why the prepared path is not the one the check allowed (a folder of it was swapped
        for a symlink in between), or None.

        The check resolved the path, then the preparation resolved it again: the path prepared
        must be allowed as it is, unless the user confirmed the call.
        """
        path = call.arguments.get("path")
        if preparation is None or not isinstance(path, str) or "confirmed" in decision.reason:
            return None
        again = self.permissions.decide(tool, {**call.arguments, "path": preparation.abs_path})
        if again.allowed:
            return None
        return (
            f"{path} resolves to {preparation.abs_path} now, which the permission check did not "
            f"allow ({again.reason}); a folder of the path changed since; nothing written"
        )

    async def repeat_read(self, call: ToolCallPart) -> CallReceipt | None:
        """Make again a read-only call whose `tool.started` is recorded but whose result is not.

        A read-only tool changed nothing the first time, so running it again is exact; this
        process's permissions decide, and the recorded start stands (no second one). None when
        this process offers no read-only tool of that name.
        """
        tool = self.registry.get(call.name)
        if tool is None or not tool.read_only:
            return None
        decision = await self._authorize(tool, call)
        if decision.decision != "allow":
            return self._result(call, _denied(decision))
        return self._result(call, await self._execute(tool, call, self.context_for(call), None))

    async def _authorize(self, tool: Tool, call: ToolCallPart) -> PermissionDecision:
        try:
            return await self.permissions.authorize(
                tool, call.arguments, interactive=self.context.interactive
            )
        except ComalError as exc:
            return PermissionDecision("deny", "policy", exc.message)

    async def _execute(
        self,
        tool: Tool,
        call: ToolCallPart,
        context: ToolContext,
        preparation: Preparation | None,
    ) -> ToolOutcome:
        try:
            outcome = await tool.run(call.arguments, context, preparation)
        except ToolError as exc:
            return ToolOutcome(output=exc.message.encode(), is_error=True, status="error")
        except asyncio.CancelledError:
            self._cancelled(call, tool, preparation)
            raise
        if self._redact is None:
            return outcome
        return replace(outcome, output=self._redact(outcome.output))

    @staticmethod
    def _hook_fields(call: ToolCallPart) -> JSONObject:
        return {
            "tool_name": call.name,
            "tool_input": claude_tool_input(call.arguments),
            "tool_use_id": call.call_id,
        }

    def _cancelled(self, call: ToolCallPart, tool: Tool, preparation: Preparation | None) -> None:
        """Record a call whose task was cancelled while it ran (a signal, a forced cancel).

        A read-only call had no effect: `cancelled`. A call with a durable preparation is
        left to recovery, whose fresh read can credit it. Anything else (Bash, MCP) may have
        done part of its work: `uncertain`, held by the insistence guard on resume.
        """
        adapter = self.registry.recovery(call.name) is not None or call.name in self._observed
        if preparation is not None and adapter:
            return
        rebuildable: object = tool  # a Tool is not declared Rebuildable; only some are
        if isinstance(rebuildable, Rebuildable):
            return  # recovery finishes it from the ledger (its children resume, none re-run)
        if tool.read_only:
            status, text = "cancelled", f"cancelled while it ran: {call.name} had no effect"
        else:
            status = "uncertain"
            text = (
                f"uncertain: the {call.name} call was cancelled while it ran (its processes "
                "were killed), so its effects are unknown. It is not run again; look at the "
                "current state before deciding what to do."
            )
        body = text.encode("utf-8")
        result = ToolResult.for_output(call.call_id, call.name, body, status=status, is_error=True)
        self._record(result, body)

    def _fail_early(self, call: ToolCallPart, message: str) -> CallReceipt:
        self._started(call, PermissionDecision("deny", "validation", message))
        return self._result(
            call, ToolOutcome(output=message.encode(), is_error=True, status="error")
        )
