"""Bash: run a command in the workspace and return its combined output and exit code.

Invariants:
- The command runs as `bash -c COMMAND` with the workspace as working directory (under
  bubblewrap when the context has a sandbox, see `tools/sandbox.py`), stdin from /dev/null,
  stdout and stderr merged into one pipe, in its **own process group**
  (`start_new_session=True`), so a timeout, a cancel (`ctx.cancel`) or the cancellation of the
  calling task kills the whole group: no orphaned children keep running.
- Nothing a call started outlives it. Sandboxed, the call has a PID namespace of its own,
  which ends with the shell. Unconfined (`full-access`), the group is killed when the call
  ends, and so is every process still in the call's session or carrying the call's
  `COMAL_BASH_CALL` mark in its environment (what `setsid … &` leaves behind).
- The output is kept byte for byte (binary and invalid UTF-8 included) up to
  `output_limit_bytes`; the rest is read and discarded so the command never blocks on a full
  pipe, and a note at the end says how much was dropped. Notes about timeouts and cancels are
  appended the same way; they are the only bytes Bash adds.
- When the shell exits but a background process still holds the output pipe open, Bash waits
  `background_grace_s` for it, then ends the group and says so.
- A command that ran, whatever its exit code, is status `ok` with `exit_code` set; a timeout,
  cancel or spawn failure is an error with `exit_code` None.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from comal.errors import ToolError
from comal.messages import JSONObject, ToolSpec
from comal.tools.base import (
    NoPreparation,
    OutputCut,
    Preparation,
    ToolContext,
    ToolOutcome,
    error_outcome,
    string_arg,
)

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
OUTPUT_LIMIT_BYTES = 32 * 1024 * 1024
BACKGROUND_GRACE_S = 0.5
_CHUNK_BYTES = 64 * 1024
_SPOOL_BYTES = 1 << 20
_POLL_S = 0.05
_AFTER_KILL_S = 1.0

BASH_SPEC = ToolSpec(
    name="Bash",
    description=(
        "Run a bash command in the workspace directory (`bash -c`, non-interactive, no "
        "stdin). Returns stdout and stderr combined, in order, and the exit code. The whole "
        f"process group is killed after `timeout_s` (default {DEFAULT_TIMEOUT_S:g}, max "
        f"{MAX_TIMEOUT_S:g}). Every process the command starts, in the background too, is "
        "ended when it returns. Prefer Read, Glob and Grep for looking at files."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout_s": {
                "type": "number",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_S,
                "description": f"Seconds before the command is killed. Default "
                f"{DEFAULT_TIMEOUT_S:g}.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
)


class _Capture:
    """Output kept up to a limit; the rest only counted.

    Past `_SPOOL_BYTES` the kept bytes wait in a temporary file: the result's bytes are then
    made by one read of it at the end, so a large output is held once in memory, not as a
    growing buffer plus the copy made from it.
    """

    def __init__(self, limit: int, on_chunk: Callable[[bytes], None] | None = None) -> None:
        self.limit = limit
        self.on_chunk = on_chunk
        self.kept = 0
        self.total = 0
        self.ends_with_newline = False
        self._spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_CHUNK_BYTES):
            if self.on_chunk is not None:
                self.on_chunk(chunk)
            room = self.limit - self.kept
            if room > 0:
                piece = chunk[:room]
                self._spool.write(piece)
                self.kept += len(piece)
                self.ends_with_newline = piece.endswith(b"\n")
            self.total += len(chunk)

    def output(self, notes: bytes = b"") -> bytes:
        """The kept bytes followed by `notes`, read back once."""
        self._spool.write(notes)
        self._spool.seek(0)
        return self._spool.read()

    def close(self) -> None:
        """Drop the spool (its file, if it has one, is deleted)."""
        self._spool.close()


def _kill_group(pgid: int) -> None:
    # The group id is the shell's pid (start_new_session). ProcessLookupError means every
    # member is already gone; PermissionError cannot happen for our own children.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


CALL_MARK = "COMAL_BASH_CALL"
"""The variable an unconfined call's processes carry, so its leftovers can be found."""


def _stat_session(pid: str) -> int | None:
    """The session id of process `pid` (None when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # Fields after the command name (which may hold spaces) start after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[3]) if len(fields) > 3 else None


def _leftovers(session: int, mark: bytes) -> list[int]:
    """Processes of the call's session, or carrying its mark, still alive."""
    found = []
    me = os.getpid()
    for path in Path("/proc").iterdir():
        entry = path.name
        if not entry.isdigit() or int(entry) == me:
            continue
        if _stat_session(entry) == session:
            found.append(int(entry))
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if mark in environ.split(b"\0"):
            found.append(int(entry))
    return found


def end_leftovers(session: int, mark: str) -> int:
    """Kill what an unconfined call left running; returns how many processes were killed."""
    _kill_group(session)
    killed = 0
    wanted = f"{CALL_MARK}={mark}".encode()
    for _ in range(5):  # a leftover may fork while it is being killed: look again
        found = _leftovers(session, wanted)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


async def _reaped(proc: asyncio.subprocess.Process) -> None:
    """Wait until the shell has been reaped (its exit code is known)."""
    # Polling, because on Python 3.11 `Process.wait()` also waits for the pipe to close.
    while proc.returncode is None:  # noqa: ASYNC110 - no event exists for "reaped"
        await asyncio.sleep(_POLL_S)


async def _release(proc: asyncio.subprocess.Process) -> None:
    """Read the pipe to its end and reap the shell, so the pipe transport closes.

    After a cancel the reader task is gone mid-stream; left alone, the transport would stay
    open (and paused if its buffer filled) until garbage collection.
    """
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(_AFTER_KILL_S):
            while await proc.stdout.read(_CHUNK_BYTES):
                pass
            await proc.wait()
    except TimeoutError:
        # Only a process that left the group on purpose keeps the pipe open this long.
        pass


class BashTool(NoPreparation):
    """The `Bash` tool.

    Args:
        default_timeout_s: timeout when the call gives none.
        max_timeout_s: the largest timeout a call may ask for.
        output_limit_bytes: output bytes kept; the rest is counted and dropped.
        background_grace_s: how long to wait for background holders of the pipe.
    """

    spec = BASH_SPEC
    read_only = False

    def __init__(
        self,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        max_timeout_s: float = MAX_TIMEOUT_S,
        output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
        background_grace_s: float = BACKGROUND_GRACE_S,
    ) -> None:
        self.default_timeout_s = default_timeout_s
        self.max_timeout_s = max_timeout_s
        self.output_limit_bytes = output_limit_bytes
        self.background_grace_s = background_grace_s

    def target(self, arguments: JSONObject) -> str | None:
        """The command line."""
        value = arguments.get("command")
        return value if isinstance(value, str) else None

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:  # noqa: ARG002
        """A command's paths cannot be known in advance; the mode governs Bash."""
        return ()

    def _timeout(self, arguments: JSONObject) -> float:
        value = arguments.get("timeout_s", self.default_timeout_s)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ToolError("timeout_s must be a positive number")
        return min(float(value), self.max_timeout_s)

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,
        preparation: Preparation | None,  # noqa: ARG002 - nothing to prepare
    ) -> ToolOutcome:
        """Run the command; see the module docstring for the guarantees."""
        try:
            command = string_arg(arguments, "command")
            timeout_s = self._timeout(arguments)
        except ToolError as exc:
            return error_outcome(exc.message)
        if "\x00" in command:
            return error_outcome(
                "not run: the command holds a NUL byte (\\0), which no command line can"
            )
        env = dict(ctx.env)
        env.setdefault("PAGER", "cat")
        env.setdefault("GIT_PAGER", "cat")
        argv = ["bash", "-c", command]
        sandbox = ctx.sandbox
        if sandbox is not None and sandbox.unavailable is None:
            with sandbox.confined():
                return await self._spawn(sandbox.wrap(argv), env, ctx, timeout_s, mark=None)
        if sandbox is not None and sandbox.config.required:
            return error_outcome(
                f"not run: [sandbox] required = true, and the sandbox is unavailable: "
                f"{sandbox.unavailable}"
            )
        mark = secrets.token_hex(8)
        env[CALL_MARK] = mark
        return await self._spawn(argv, env, ctx, timeout_s, mark=mark)

    async def _spawn(
        self,
        argv: list[str],
        env: dict[str, str],
        ctx: ToolContext,
        timeout_s: float,
        *,
        mark: str | None,
    ) -> ToolOutcome:
        """Run `argv` and collect its outcome; `mark`: the unconfined call's leftover mark."""
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=ctx.workspace,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return error_outcome(f"cannot start {argv[0]}: {exc.strerror or exc}")
        assert proc.stdout is not None  # stdout=PIPE guarantees it
        told = ctx.on_output
        capture = _Capture(
            self.output_limit_bytes,
            None if told is None else partial(told, ctx.call_id),
        )
        try:
            try:
                ending = await self._supervise(proc, capture, timeout_s, ctx.cancel)
            finally:
                # Also reached when the calling task is cancelled: never leave the group
                # running.
                if proc.returncode is None:
                    _kill_group(proc.pid)
                if mark is not None:
                    await asyncio.to_thread(end_leftovers, proc.pid, mark)
                await _release(proc)
            return self._outcome(capture, proc.returncode, ending, timeout_s)
        finally:
            capture.close()

    async def _supervise(
        self,
        proc: asyncio.subprocess.Process,
        capture: _Capture,
        timeout_s: float,
        cancel: asyncio.Event | None,
    ) -> str | None:
        """Wait for the output to end; returns why the group was killed, if it was.

        `Process.wait()` cannot tell when the shell exits (on Python 3.11 it also waits for
        the pipe to close), so the shell's exit is seen by polling `returncode`, which the
        child watcher sets as soon as the shell is reaped.
        """
        assert proc.stdout is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        reader = asyncio.create_task(capture.drain(proc.stdout))
        stopper = asyncio.create_task(cancel.wait()) if cancel is not None else None
        watched = {reader} if stopper is None else {reader, stopper}
        exited_at: float | None = None
        ending: str | None = None
        try:
            while ending is None:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    ending = "timeout"
                    break
                done, _ = await asyncio.wait(
                    watched, timeout=min(remaining, _POLL_S), return_when=asyncio.FIRST_COMPLETED
                )
                if reader in done:
                    break
                if stopper is not None and stopper in done:
                    ending = "cancelled"
                elif proc.returncode is not None:
                    exited_at = loop.time() if exited_at is None else exited_at
                    if loop.time() - exited_at >= self.background_grace_s:
                        ending = "background"
            if ending is not None:
                _kill_group(proc.pid)
                # The pipe closes once the group is dead, unless a process left it on purpose.
                await asyncio.wait({reader}, timeout=_AFTER_KILL_S)
            await _reaped(proc)
        finally:
            for task in (reader, stopper):
                if task is not None and not task.done():
                    task.cancel()
            await asyncio.gather(
                *(t for t in (reader, stopper) if t is not None), return_exceptions=True
            )
        return ending

    def _outcome(
        self, capture: _Capture, returncode: int | None, ending: str | None, timeout_s: float
    ) -> ToolOutcome:
        notes: list[str] = []
        cut = None
        if capture.total > capture.kept:
            cut = OutputCut(self.output_limit_bytes, capture.total)
            notes.append(
                f"[output cut at the {self.output_limit_bytes:,}-byte limit: kept the first"
                f" {capture.kept:,} of {capture.total:,} bytes; the rest was not recorded]"
            )
        if ending == "timeout":
            notes.append(f"[timed out after {timeout_s:g}s; process group killed]")
        elif ending == "cancelled":
            notes.append("[cancelled; process group killed]")
        elif ending == "background":
            notes.append(
                "[background processes still held the output open after the command "
                "exited; they were killed]"
            )
        tail = b""
        if notes:
            sep = b"" if not capture.kept or capture.ends_with_newline else b"\n"
            tail = sep + "\n".join(notes).encode("utf-8") + b"\n"
        output = capture.output(tail)
        if ending in ("timeout", "cancelled"):
            return ToolOutcome(output, is_error=True, exit_code=None, status="error", cut=cut)
        return ToolOutcome(output, exit_code=returncode, cut=cut)
