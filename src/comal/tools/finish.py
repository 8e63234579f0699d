"""`finish_call`: the tool that ends a task, only once the configured checks pass.

It runs, in the workspace and in this order, the configured checks (`checks = [...]` in the
configuration), the `check` command of every board criterion, and then the loaded plugins'
finish checks (judged on the session's recorded calls). Only when every check
exits 0 and no criterion is still pending or in progress does it close the session (through an
injected `FinishStore`, which appends `session.finished` and sets the status); otherwise the
session stays open and the failing commands' exact output comes back as the tool's (error)
result — evidence the model can act on.

Invariants: a session is never closed with a failing or skipped check; a criterion's check is
a command the model wrote, so it passes the permission policy exactly like a Bash call (the
configured checks are the user's own and run as configured); a recovered answer never calls
this, so recovery never declares a task done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from comal.errors import ToolError
from comal.messages import JSONObject, ToolSpec
from comal.tools.base import (
    NoPreparation,
    Preparation,
    ToolContext,
    ToolOutcome,
    error_outcome,
    render_outcome,
    string_arg,
    text_outcome,
)
from comal.tools.board import Criterion
from comal.tools.plugin import FinishCheck, RecordedCall
from comal.tools.shell import MAX_TIMEOUT_S, BashTool

FINISH_NAME = "finish_call"
"""The tool's name, as the model calls it."""

FINISH_SPEC = ToolSpec(
    name=FINISH_NAME,
    description=(
        "Finish the task. Runs the project's configured checks and every board criterion's "
        "`check` command; the session closes only if all pass and no criterion is pending or "
        "in progress. On failure the failing output is returned and the session stays open: "
        "fix the cause and call finish_call again. `answer` is the final answer for the user."
    ),
    parameters={
        "type": "object",
        "properties": {
            "answer": {
                "type": "string",
                "description": "The final answer: what was done and how it was verified.",
            }
        },
        "required": ["answer"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class CheckRun:
    """One check command and how it ended."""

    command: str
    origin: str
    """`config`, or `criterion <id>`."""
    exit_code: int | None
    passed: bool
    output: str


class FinishStore(Protocol):
    """What finish_call reads and writes (the agent backs it with the ledger)."""

    def board(self) -> tuple[Criterion, ...]:
        """The current board."""
        ...

    def record_finish(self, answer: str, checks: tuple[CheckRun, ...]) -> None:
        """Close the session durably with its answer and the checks that passed."""
        ...

    def calls(self) -> tuple[RecordedCall, ...]:
        """The session's recorded calls with their results (for plugin checks)."""
        ...


def _describe(run: CheckRun) -> str:
    if run.origin.startswith("plugin "):
        return f"[{run.origin}] {'passed' if run.passed else 'failed'}: {run.output}"
    code = "no exit code" if run.exit_code is None else f"exit {run.exit_code}"
    return f"$ {run.command}  [{run.origin}] → {code}"


async def run_check(shell: BashTool, command: str, origin: str, ctx: ToolContext) -> CheckRun:
    """Run one check command; a check the model wrote (not `config`) passes the permission
    policy exactly like a Bash call."""
    if origin != "config":
        decision = ctx.permissions.decide(shell, {"command": command})
        if not decision.allowed:
            return CheckRun(command, origin, None, False, f"not run: {decision.reason}")
    outcome = await shell.run({"command": command}, ctx, None)
    passed = not outcome.is_error and outcome.exit_code == 0
    return CheckRun(command, origin, outcome.exit_code, passed, render_outcome(outcome))


def describe_check(run: CheckRun) -> str:
    """`$ command  [origin] → exit N`."""
    return _describe(run)


class FinishTool(NoPreparation):
    """The `finish_call` tool.

    Args:
        store: the board reader and session closer.
        checks: the configured check commands (`Config.checks`).
        timeout_s: seconds each check may run.
    """

    spec = FINISH_SPEC
    read_only = True
    """It closes the session but changes nothing itself; checks are governed separately."""

    def __init__(
        self,
        store: FinishStore,
        checks: Sequence[str] = (),
        timeout_s: float = MAX_TIMEOUT_S,
        plugin_checks: Sequence[FinishCheck] = (),
    ) -> None:
        self.store = store
        self.checks = tuple(checks)
        self.plugin_checks = tuple(plugin_checks)
        self.timeout_s = timeout_s
        self._shell = BashTool(default_timeout_s=timeout_s, max_timeout_s=timeout_s)

    def target(self, arguments: JSONObject) -> str | None:  # noqa: ARG002
        """No path or command to match rules on."""
        return None

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:  # noqa: ARG002
        """The call itself touches no files."""
        return ()

    async def _run_check(self, command: str, origin: str, ctx: ToolContext) -> CheckRun:
        return await run_check(self._shell, command, origin, ctx)

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,
        preparation: Preparation | None,  # noqa: ARG002
    ) -> ToolOutcome:
        """Run the checks; close the session only if every one passes."""
        try:
            answer = string_arg(arguments, "answer")
        except ToolError as exc:
            return error_outcome(exc.message)
        board = self.store.board()
        still_open = [c for c in board if c.open]
        if still_open:
            listed = "\n".join(f"[{c.status}] {c.id}: {c.text}" for c in still_open)
            return error_outcome(
                f"finish_call refused: {len(still_open)} board criteria are still open; the "
                "session stays open. Finish them (or mark them blocked with a reason) and "
                f"call finish_call again.\n{listed}"
            )
        plan = [(command, "config") for command in self.checks]
        plan += [(c.check, f"criterion {c.id}") for c in board if c.check]
        runs = [await self._run_check(command, origin, ctx) for command, origin in plan]
        if self.plugin_checks:
            calls = self.store.calls()
            for check in self.plugin_checks:
                verdict = check.check(calls)
                runs.append(
                    CheckRun(
                        verdict.name,
                        f"plugin {check.name}",
                        0 if verdict.passed else None,
                        verdict.passed,
                        verdict.detail,
                    )
                )
        failed = [r for r in runs if not r.passed]
        if failed:
            parts = [
                f"finish_call: {len(failed)} of {len(runs)} checks failed; the session stays "
                "open. Fix the cause and call finish_call again."
            ]
            for run in runs:
                plugin = run.origin.startswith("plugin ")
                extra = "" if run.passed or plugin else f"\n{run.output}"
                parts.append(_describe(run) + extra)
            return error_outcome("\n".join(parts))
        self.store.record_finish(answer, tuple(runs))
        if not runs:
            return text_outcome("No checks are configured; the session is finished.")
        lines = [f"All {len(runs)} checks passed; the session is finished."]
        lines += [_describe(run) for run in runs]
        return text_outcome("\n".join(lines))
