"""Running one tool call with write-ahead receipts.

Order of effects, each step durable before the next:
1. permission decision (and, for Write/Edit, the preparation: path, digest before, digest intended);
2. `tool.started` with both — before the tool touches anything;
3. the tool runs;
4. `tool.result` with the exact output bytes as a blob.
A call that is denied, unknown, or has invalid arguments still gets `tool.started` and a
`tool.result`, so the model always sees exactly one result per call and the ledger shows why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from comal.errors import ComalError, ToolError
from comal.messages import JSONObject, ToolCallPart, digest_bytes, render_output_text
from comal.tools.base import (
    PermissionDecision,
    Preparation,
    ToolContext,
    ToolOutcome,
    ToolRegistry,
    validate_arguments,
)
from comal.tools.permissions import PermissionPolicy

RecordFn = Callable[[str, JSONObject, bytes | None], None]
"""Appends one ledger entry: `record(kind, payload, body)`."""

INVALID_ARGUMENTS_KEY = "_invalid_arguments"
"""Argument key under which a call whose arguments were not valid JSON keeps its raw text."""


@dataclass(frozen=True, slots=True)
class CallReceipt:
    """What the runner recorded for one call."""

    call_id: str
    name: str
    status: str
    exit_code: int | None
    size_bytes: int
    preview: str


def _preparation_json(prep: Preparation) -> JSONObject:
    return {
        "path": prep.path,
        "abs_path": prep.abs_path,
        "digest_before": prep.digest_before,
        "digest_intended": prep.digest_intended,
    }


def _decision_json(decision: PermissionDecision) -> JSONObject:
    return {"decision": decision.decision, "mode": decision.mode, "reason": decision.reason}


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
        record: appends one ledger entry (kind, payload, body) and returns nothing.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        permissions: PermissionPolicy,
        context: ToolContext,
        record: RecordFn,
    ) -> None:
        self.registry = registry
        self.permissions = permissions
        self.context = context
        self._record = record

    def _started(
        self,
        call: ToolCallPart,
        decision: PermissionDecision,
        preparation: Preparation | None = None,
    ) -> None:
        payload: JSONObject = {
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
            "permission": _decision_json(decision),
        }
        if preparation is not None:
            payload["preparation"] = _preparation_json(preparation)
        self._record("tool.started", payload, None)

    def _result(self, call: ToolCallPart, outcome: ToolOutcome) -> CallReceipt:
        payload: JSONObject = {
            "call_id": call.call_id,
            "name": call.name,
            "status": outcome.status,
            "is_error": outcome.is_error,
            "exit_code": outcome.exit_code,
            "size_bytes": len(outcome.output),
            "digest": digest_bytes(outcome.output),
        }
        if outcome.media:
            payload["media"] = [
                {"media_type": m.media_type, "data_b64": m.data_b64} for m in outcome.media
            ]
        self._record("tool.result", payload, outcome.output)
        text = render_output_text(outcome.output[:400])
        return CallReceipt(
            call.call_id, call.name, outcome.status, outcome.exit_code, len(outcome.output), text
        )

    def refuse(self, call: ToolCallPart, reason: str, *, mode: str = "policy") -> CallReceipt:
        """Record a call that will not run (no tool effect), with a clear error result."""
        decision = PermissionDecision("deny", mode, reason)
        self._started(call, decision)
        return self._result(
            call, ToolOutcome(output=reason.encode(), is_error=True, status="denied")
        )

    async def run(self, call: ToolCallPart) -> CallReceipt:
        """Run one call end to end and return its receipt."""
        if INVALID_ARGUMENTS_KEY in call.arguments:
            return self._fail_early(
                call, f"arguments were not valid JSON: {call.arguments[INVALID_ARGUMENTS_KEY]}"
            )
        tool = self.registry.get(call.name)
        if tool is None:
            known = ", ".join(s.name for s in self.registry.specs())
            return self._fail_early(call, f"unknown tool {call.name!r}; available: {known}")
        problem = validate_arguments(tool.spec, call.arguments)
        if problem is not None:
            return self._fail_early(call, f"invalid arguments for {call.name}: {problem}")
        try:
            decision = await self.permissions.authorize(
                tool, call.arguments, interactive=self.context.interactive
            )
        except ComalError as exc:
            decision = PermissionDecision("deny", "policy", exc.message)
        if decision.decision != "allow":
            self._started(call, decision)
            return self._result(
                call,
                ToolOutcome(
                    output=f"permission denied: {decision.reason}".encode(),
                    is_error=True,
                    status="denied",
                ),
            )
        try:
            preparation = await tool.prepare(call.arguments, self.context)
        except ComalError as exc:
            self._started(call, decision)
            return self._result(
                call, ToolOutcome(output=exc.message.encode(), is_error=True, status="error")
            )
        self._started(call, decision, preparation)
        try:
            outcome = await tool.run(call.arguments, self.context, preparation)
        except ToolError as exc:
            outcome = ToolOutcome(output=exc.message.encode(), is_error=True, status="error")
        return self._result(call, outcome)

    def _fail_early(self, call: ToolCallPart, message: str) -> CallReceipt:
        self._started(call, PermissionDecision("deny", "validation", message))
        return self._result(
            call, ToolOutcome(output=message.encode(), is_error=True, status="error")
        )
