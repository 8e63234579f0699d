"""Hooks with Claude Code's protocol: a command gets the event as JSON on stdin.

Invariants:
- The payload has Claude Code's fields (`session_id`, `transcript_path`, `cwd`,
  `permission_mode`, `hook_event_name`, and per event `tool_name`, `tool_input`, `tool_use_id`,
  `tool_response`, `prompt`, `stop_hook_active`), so hooks written for Claude Code run as they
  are. Comal keeps no JSONL transcript: `transcript_path` is the ledger file.
- Exit 2 blocks: the PreToolUse call does not run and the model reads the hook's stderr as its
  result; a UserPromptSubmit prompt is not sent; a Stop hook's stderr is given to the model and
  the turn goes on; a PostToolUse hook's stderr is given to the model after the results. A JSON
  answer on stdout with `"decision": "block"` (or PreToolUse `permissionDecision: "deny"`)
  blocks the same way. Any other failure (another exit code, a timeout) is recorded and does
  not block.
- Every run is recorded as a `hook.run` entry before its effect is applied.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from comal.config import HookConfig
from comal.ledger.entry import Entry
from comal.ledger.records import HookRun, Record
from comal.messages import JSONObject, JSONValue

RecordFn = Callable[[Record], Entry]
BLOCK_EXIT = 2
SHOWN_CHARS = 4_000
"""Stdout and stderr kept in a `hook.run` entry (the rest is cut, and said so)."""


@dataclass(frozen=True, slots=True)
class HookVerdict:
    """What the hooks of one event said."""

    blocked: bool = False
    reason: str = ""
    """The blocking hook's stderr (or JSON reason): what the model is told."""
    context: str = ""
    """Stdout of successful UserPromptSubmit hooks: added to the prompt, as Claude Code does."""


def _shown(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return text[:SHOWN_CHARS] + f"\n… {len(text) - SHOWN_CHARS:,} more characters not kept"


def _matches(hook: HookConfig, tool: str | None) -> bool:
    if tool is None or hook.matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(hook.matcher, tool) is not None
    except re.error:
        return hook.matcher == tool


def _json_block(stdout: str) -> str | None:
    """The reason of a JSON `block`/`deny` answer on stdout, if it is one."""
    try:
        answer = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    if not isinstance(answer, dict):
        return None
    if answer.get("decision") == "block":
        return str(answer.get("reason") or "blocked by a hook")
    specific = answer.get("hookSpecificOutput")
    if isinstance(specific, dict) and specific.get("permissionDecision") == "deny":
        return str(specific.get("permissionDecisionReason") or "denied by a hook")
    return None


def claude_tool_input(arguments: JSONObject) -> JSONObject:
    """Tool arguments with Claude Code's names added (`file_path` beside `path`)."""
    if "path" in arguments and "file_path" not in arguments:
        return {**arguments, "file_path": arguments["path"]}
    return arguments


class Hooks:
    """The configured hooks of one session.

    Args:
        hooks: every configured hook.
        session_id: the session they run for.
        cwd: the workspace (their working directory and `CLAUDE_PROJECT_DIR`).
        ledger_path: given as `transcript_path` (the ledger's file, or its URL without the
            password).
        record: appends one entry to the session.
        env: the environment the commands get.
        redact: applied to a hook's stdout and stderr before they are recorded or used.
    """

    def __init__(
        self,
        hooks: tuple[HookConfig, ...],
        *,
        session_id: str,
        cwd: Path,
        ledger_path: str | Path,
        record: RecordFn,
        env: dict[str, str] | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.hooks = hooks
        self.session_id = session_id
        self.cwd = cwd
        self.ledger_path = ledger_path
        self._record = record
        self._redact = redact
        self._env = {**(env if env is not None else os.environ)}
        self._env["CLAUDE_PROJECT_DIR"] = self._env["COMAL_PROJECT_DIR"] = str(cwd)

    def configured(self, event: str) -> bool:
        """Whether any hook listens to `event`."""
        return any(h.event == event for h in self.hooks)

    async def run(self, event: str, fields: JSONObject, tool: str | None = None) -> HookVerdict:
        """Run the event's matching hooks in order; the first block stops the rest."""
        payload: JSONObject = {
            "session_id": self.session_id,
            "transcript_path": str(self.ledger_path),
            "cwd": str(self.cwd),
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        context: list[str] = []
        for hook in self.hooks:
            if hook.event != event or not _matches(hook, tool):
                continue
            code, stdout, stderr, timed_out = await self._execute(hook, payload)
            if self._redact is not None:
                stdout, stderr = self._redact(stdout), self._redact(stderr)
            reason = stderr.strip() if code == BLOCK_EXIT else None
            if code == 0:
                reason = _json_block(stdout)
            record = HookRun(
                event=event,
                matcher=hook.matcher,
                command=hook.command,
                source=hook.source,
                tool=tool,
                exit_code=code,
                timed_out=timed_out,
                blocked=reason is not None,
                stdout=_shown(stdout),
                stderr=_shown(stderr),
            )
            self._record(record)
            if reason is not None:
                return HookVerdict(True, reason or f"blocked by the {event} hook {hook.command}")
            if code == 0 and event == "UserPromptSubmit" and stdout.strip():
                context.append(stdout.strip())
        return HookVerdict(context="\n".join(context))

    async def _execute(
        self, hook: HookConfig, payload: JSONObject
    ) -> tuple[int | None, str, str, bool]:
        """(exit code, stdout, stderr, timed out) of one hook command."""
        data = json.dumps(payload, ensure_ascii=False).encode()
        try:
            proc = await asyncio.create_subprocess_shell(
                hook.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=self._env,
                start_new_session=True,
            )
        except OSError as exc:
            return None, "", f"cannot start the hook: {exc.strerror or exc}", False
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), hook.timeout_s)
        except TimeoutError:
            proc.kill()
            out, err = await proc.communicate()
            return None, out.decode(errors="replace"), err.decode(errors="replace"), True
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), False


def tool_response(output: bytes, is_error: bool, exit_code: int | None) -> JSONValue:
    """The `tool_response` of a PostToolUse payload."""
    return {
        "output": output.decode("utf-8", errors="replace"),
        "is_error": is_error,
        "exit_code": exit_code,
    }
