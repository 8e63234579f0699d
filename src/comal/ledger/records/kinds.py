"""Every entry kind Comal writes, as one enum.

`Kind` is a `StrEnum`: a member is the very string the ledger stores (`Kind.TOOL_RESULT ==
"tool.result"`), so the ledger's bytes, its content hashes and every JSON document that
names a kind are the same whether a kind is written as a member or read back as a string. An
entry's `kind` is read back as a plain `str`: a ledger a newer Comal wrote may hold kinds this
enum does not name, and they are read (and skipped by the readers that do not know them), never
refused.
"""

from __future__ import annotations

from enum import StrEnum, unique


@unique
class Kind(StrEnum):
    """An entry kind (in the order of the docs table, `python -m comal.ledger.records`)."""

    SESSION_STARTED = "session.started"
    SESSION_TOOLS = "session.tools"
    SESSION_PLUGINS = "session.plugins"
    MESSAGE_USER = "message.user"
    MESSAGE_ASSISTANT = "message.assistant"
    MESSAGE_SUMMARY = "message.summary"
    PROVIDER_REQUEST = "provider.request"
    PROVIDER_RESENT = "provider.resent"
    PROVIDER_ERROR = "provider.error"
    RESPONSE_DISCARDED = "response.discarded"
    TOOL_STARTED = "tool.started"
    TOOL_RESULT = "tool.result"
    PROJECTION = "projection"
    CHECKPOINT = "checkpoint"
    PRESSURE_DEFERRED = "pressure.deferred"
    CONTEXT_CALIBRATED = "context.calibrated"
    BOARD_UPDATED = "board.updated"
    COMPACT_REQUESTED = "compact.requested"
    COMPACT_CANCELLED = "compact.cancelled"
    LOCK_ACQUIRED = "lock.acquired"
    LOCK_RECLAIMED = "lock.reclaimed"
    SESSION_CONFIGURED = "session.configured"
    SESSION_FORKED = "session.forked"
    SESSION_REWOUND = "session.rewound"
    HOOK_RUN = "hook.run"
    USER_SHELL = "user.shell"
    SESSION_FINISHED = "session.finished"
    SESSION_RESUMED = "session.resumed"
    SESSION_MOVED = "session.moved"
    WARNING = "warning"
    CHILD_RECEIPT = "child.receipt"
