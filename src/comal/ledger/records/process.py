"""Records of what happens around a session's turns: locks taken, hooks run, warnings, and
the receipt that closes a child session."""

from __future__ import annotations

from typing import ClassVar, Self

import comal.ledger.records.fields as f
from comal.ledger.records.base import RecordBase
from comal.ledger.records.kinds import Kind
from comal.messages import JSONObject
from comal.values import value


@value
class LockAcquired(RecordBase):
    """A process took the session: its `pid`, `host`, `process_started_at` and
    `process_start_id` (`<boot id>:<start ticks>`, tells a recycled pid apart); `host_id` (the
    machine's identity its lease is judged by: `COMAL_HOST_ID`, else the machine id; absent
    in older ledgers)."""

    KIND = Kind.LOCK_ACQUIRED
    WRITTEN_BY: ClassVar[str] = "ledger locks"

    pid: int
    host: str
    process_started_at: int
    process_start_id: str
    host_id: str | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "pid": self.pid,
            "host": self.host,
            "process_started_at": self.process_started_at,
            "process_start_id": self.process_start_id,
        }
        f.put(payload, "host_id", self.host_id)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.integer(payload, "pid"),
            f.text(payload, "host"),
            f.integer(payload, "process_started_at"),
            f.text(payload, "process_start_id"),
            f.text_or_none(payload, "host_id"),
        )


@value
class LockReclaimed(RecordBase):
    """A process took the session from a dead holder: as `lock.acquired`, plus `previous`
    (the dead holder's same fields, and its lease's `expires_at`) and `reason`
    (`holder_dead`: a process of this host that no longer runs; `lease_expired`: a holder on
    another host whose lease ran out without a heartbeat; absent in older ledgers)."""

    KIND = Kind.LOCK_RECLAIMED
    WRITTEN_BY: ClassVar[str] = "ledger locks"

    pid: int
    host: str
    process_started_at: int
    process_start_id: str
    previous: JSONObject
    host_id: str | None = None
    reason: str | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "pid": self.pid,
            "host": self.host,
            "process_started_at": self.process_started_at,
            "process_start_id": self.process_start_id,
            "previous": self.previous,
        }
        f.put(payload, "host_id", self.host_id)
        f.put(payload, "reason", self.reason)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.integer(payload, "pid"),
            f.text(payload, "host"),
            f.integer(payload, "process_started_at"),
            f.text(payload, "process_start_id"),
            f.obj(payload, "previous"),
            f.text_or_none(payload, "host_id"),
            f.text_or_none(payload, "reason"),
        )


@value
class HookRun(RecordBase):
    """A hook ran (written before its effect applies): `event` (`PreToolUse`, `PostToolUse`,
    `UserPromptSubmit`, `Stop`), `source` (`config.toml` or the settings file), `tool` (or
    null), `exit_code` (null: did not start or timed out), `stdout` and `stderr` (each cut
    to 4,000 characters, saying so)."""

    KIND = Kind.HOOK_RUN
    WRITTEN_BY: ClassVar[str] = "agent (hooks)"

    event: str
    matcher: str
    command: str
    source: str
    tool: str | None
    exit_code: int | None
    timed_out: bool
    blocked: bool
    stdout: str
    stderr: str

    def to_payload(self) -> JSONObject:
        return {
            "event": self.event,
            "matcher": self.matcher,
            "command": self.command,
            "source": self.source,
            "tool": self.tool,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "blocked": self.blocked,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "event"),
            f.text(payload, "matcher"),
            f.text(payload, "command"),
            f.text(payload, "source"),
            f.text_or_none(payload, "tool"),
            f.int_or_none(payload, "exit_code"),
            f.flag(payload, "timed_out"),
            f.flag(payload, "blocked"),
            f.text(payload, "stdout"),
            f.text(payload, "stderr"),
        )


@value
class WarningRecord(RecordBase):
    """A notice: `code` and `message` (e.g. `PLUGIN_UNAVAILABLE`, `MCP_SERVER_UNAVAILABLE`,
    `PROMPT_TRUNCATED`); `turn: "failed"` when a turn stopped on it (a failed follow-up
    leaves the session's earlier answer and status standing)."""

    KIND = Kind.WARNING
    WRITTEN_BY: ClassVar[str] = "anyone"

    code: str
    message: str
    turn: str | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {"code": self.code, "message": self.message}
        f.put(payload, "turn", self.turn)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "code"), f.text(payload, "message"), f.text_or_none(payload, "turn")
        )


@value
class UserShell(RecordBase):
    """A command the user ran in the workspace (`!cmd` in the TUI), not the model: `command`,
    `exit_code` (null when it was killed or did not start), `is_error`, `size_bytes` of its
    output (kept as the entry's body). Its output goes with the user's next message, which
    records it again as part of that message."""

    KIND = Kind.USER_SHELL
    WRITTEN_BY: ClassVar[str] = "tui"

    command: str
    exit_code: int | None
    is_error: bool
    size_bytes: int

    def to_payload(self) -> JSONObject:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "is_error": self.is_error,
            "size_bytes": self.size_bytes,
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "command"),
            f.int_or_none(payload, "exit_code"),
            payload.get("is_error") is True,
            f.int_or_none(payload, "size_bytes") or 0,
        )


@value
class ChildReceiptRecord(RecordBase):
    """The last entry of a child session (one with it is never run again): `call_id` (the
    coordinator's call), `status` (`finished`, `budget_exhausted`, `failed`), `answer` (the
    child's last answer, verbatim), `reason` (why it stopped early, "" otherwise), `usage`
    (measured, summed over the child's responses), `requests`, `evidence` [{`ref` (a
    `tool.result` id of the child), `tool`}]."""

    KIND = Kind.CHILD_RECEIPT
    WRITTEN_BY: ClassVar[str] = "agent (children)"

    call_id: str
    status: str
    answer: str
    reason: str
    usage: JSONObject | None
    requests: int
    evidence: tuple[JSONObject, ...]

    def to_payload(self) -> JSONObject:
        return {
            "call_id": self.call_id,
            "status": self.status,
            "answer": self.answer,
            "reason": self.reason,
            "usage": self.usage,
            "requests": self.requests,
            "evidence": f.json_list(self.evidence),
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "call_id"),
            f.text(payload, "status"),
            f.text(payload, "answer"),
            f.text(payload, "reason"),
            f.obj_or_none(payload, "usage"),
            f.integer(payload, "requests"),
            f.objects(payload, "evidence"),
        )
