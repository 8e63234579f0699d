"""Records of a session's life: start, catalogs, configuration, resume, fork, rewind, move and
finish (`process.py` holds locks, hooks, warnings and receipts). `window` fields are {`tokens`,
`source`}."""

from __future__ import annotations

from typing import ClassVar, Self

import comal.ledger.records.fields as f
from comal.ledger.records.base import RecordBase
from comal.ledger.records.kinds import Kind
from comal.ledger.records.nested import (
    ChildOrigin,
    ImportOrigin,
    RecordedWindow,
    origin_from_json,
)
from comal.messages import JSONObject
from comal.values import value


@value
class SessionStarted(RecordBase):
    """The first entry of a session: `vision` (whether the model takes images; absent in
    older sessions and imports), `source` (`comal`, `comal:child`, `bench:replay` or
    `import:<format>`). Imports add `system` (the recorded system prompt, "" if none) and
    `origin` {`file`, `label`, `id`, `sha256` (of the file), `index`, `parent_call` (a
    sub-agent: the parent's call that ran it), `compaction`}; a child adds `origin`
    {`parent_session`, `parent_call`, `kind` (`task`, `step`, `draft`), `key`} and `task`
    {`description`, `tools` (null: the read-only default), `max_turns`, `max_tokens`}."""

    KIND = Kind.SESSION_STARTED
    WRITTEN_BY: ClassVar[str] = "agent, importers, replay"

    cwd: str
    provider: str
    wire: str
    model: str
    window: RecordedWindow
    source: str
    vision: bool | None = None
    system: str | None = None
    origin: ImportOrigin | ChildOrigin | None = None
    task: JSONObject | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "cwd": self.cwd,
            "provider": self.provider,
            "wire": self.wire,
            "model": self.model,
            "window": self.window.to_json(),
            "source": self.source,
        }
        f.put(payload, "vision", self.vision)
        f.put(payload, "system", self.system)
        f.put(payload, "origin", None if self.origin is None else self.origin.to_json())
        f.put(payload, "task", self.task)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "cwd"),
            f.text(payload, "provider"),
            f.text(payload, "wire"),
            f.text(payload, "model"),
            RecordedWindow.from_json(f.obj(payload, "window")),
            f.text(payload, "source"),
            f.flag_or_none(payload, "vision"),
            f.text_or_none(payload, "system"),
            _origin(f.obj_or_none(payload, "origin")),
            f.obj_or_none(payload, "task"),
        )


@value
class SessionTools(RecordBase):
    """The tools offered, written at every session open while MCP servers are configured:
    `native` (names of the native and session-bound tools), `mcp` [{`server`, `name` (as
    offered: `mcp__<server>__<tool>`), `tool` (the server's own name), `schema_bytes`}],
    `failed` [{`server`, `message`}] (servers that did not start; each also gets a `warning`
    `MCP_SERVER_UNAVAILABLE`), `mcp_digest`, `body` (the offered MCP tool specs as canonical
    JSON `[{name, description, parameters}]`); reports count MCP schemas from the latest."""

    KIND = Kind.SESSION_TOOLS
    WRITTEN_BY: ClassVar[str] = "agent"

    native: tuple[str, ...]
    mcp: tuple[JSONObject, ...]
    failed: tuple[JSONObject, ...]
    mcp_digest: str
    body: JSONObject | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "native": f.json_list(self.native),
            "mcp": f.json_list(self.mcp),
            "failed": f.json_list(self.failed),
            "mcp_digest": self.mcp_digest,
        }
        f.put(payload, "body", self.body)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.strings(payload, "native"),
            f.objects(payload, "mcp"),
            f.objects(payload, "failed"),
            f.text(payload, "mcp_digest"),
            f.obj_or_none(payload, "body"),
        )


@value
class SessionPlugins(RecordBase):
    """The plugins, written at every session open while plugins are enabled: `loaded`
    [{`name`, `tools`, `recovery` (tools with a recovery adapter), `checks` (finish_call
    checks), `schema_bytes`}], `failed` [{`name`, `message`}], `body` (the offered plugin
    tool specs as canonical JSON); `comal context` counts plugin schemas from the latest."""

    KIND = Kind.SESSION_PLUGINS
    WRITTEN_BY: ClassVar[str] = "agent"

    loaded: tuple[JSONObject, ...]
    failed: tuple[JSONObject, ...]
    body: JSONObject | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "loaded": f.json_list(self.loaded),
            "failed": f.json_list(self.failed),
        }
        f.put(payload, "body", self.body)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.objects(payload, "loaded"),
            f.objects(payload, "failed"),
            f.obj_or_none(payload, "body"),
        )


@value
class SessionConfigured(RecordBase):
    """The model or reasoning effort changed mid-session (TUI `/model`, `/effort`); later
    requests carry the new fingerprint, so earlier anchors no longer apply."""

    KIND = Kind.SESSION_CONFIGURED
    WRITTEN_BY: ClassVar[str] = "agent (`reconfigure`)"

    provider: str
    wire: str
    model: str
    effort: str | None
    window: RecordedWindow

    def to_payload(self) -> JSONObject:
        return {
            "provider": self.provider,
            "wire": self.wire,
            "model": self.model,
            "effort": self.effort,
            "window": self.window.to_json(),
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "provider"),
            f.text(payload, "wire"),
            f.text(payload, "model"),
            f.text_or_none(payload, "effort"),
            RecordedWindow.from_json(f.obj(payload, "window")),
        )


@value
class SessionResumed(RecordBase):
    """What a resumed session runs on from now on (reports use the latest of this and
    `session.started`)."""

    KIND = Kind.SESSION_RESUMED
    WRITTEN_BY: ClassVar[str] = "agent"

    provider: str
    wire: str
    model: str
    window: RecordedWindow

    def to_payload(self) -> JSONObject:
        return {
            "provider": self.provider,
            "wire": self.wire,
            "model": self.model,
            "window": self.window.to_json(),
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "provider"),
            f.text(payload, "wire"),
            f.text(payload, "model"),
            RecordedWindow.from_json(f.obj(payload, "window")),
        )


@value
class SessionForked(RecordBase):
    """The first own entry of a fork (`comal fork`): its history is `parent`'s through
    `through_seq` (entry `through_entry`); its row links to the parent."""

    KIND = Kind.SESSION_FORKED
    WRITTEN_BY: ClassVar[str] = "ledger (`fork_session`)"

    parent: str
    through_seq: int
    through_entry: str

    def to_payload(self) -> JSONObject:
        return {
            "parent": self.parent,
            "through_seq": self.through_seq,
            "through_entry": self.through_entry,
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "parent"),
            f.integer(payload, "through_seq"),
            f.text(payload, "through_entry"),
        )


@value
class SessionRewound(RecordBase):
    """A rewind: the history through `to_seq` is kept; `to` is its label (`before turn N`,
    `checkpoint N`, `after entry evt_…`); `conversation` true: the entries after `to_seq` and
    before this one leave the history; `files` [{`path`, `restored_digest` (null: removed),
    `previous_digest`, `forced` (it overwrote a change made outside the session)}] (what the
    file held is kept as a blob, so a later rewind can come back to it); `not_restorable`
    (Bash and MCP calls after the point, and files whose bytes were not kept)."""

    KIND = Kind.SESSION_REWOUND
    WRITTEN_BY: ClassVar[str] = "`comal rewind`, TUI `/rewind`"

    to_seq: int
    to: str
    files: tuple[JSONObject, ...]
    files_restored: bool
    conversation: bool
    not_restorable: tuple[str, ...]

    def to_payload(self) -> JSONObject:
        return {
            "to_seq": self.to_seq,
            "to": self.to,
            "files": f.json_list(self.files),
            "files_restored": self.files_restored,
            "conversation": self.conversation,
            "not_restorable": f.json_list(self.not_restorable),
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.integer(payload, "to_seq"),
            f.text(payload, "to"),
            f.objects(payload, "files"),
            f.flag(payload, "files_restored"),
            f.flag(payload, "conversation"),
            f.strings(payload, "not_restorable"),
        )


@value
class SessionMoved(RecordBase):
    """The workspace a resumed session runs its tools in from now on (`--cwd` on resume)."""

    KIND = Kind.SESSION_MOVED
    WRITTEN_BY: ClassVar[str] = "CLI resume"

    from_: str
    to: str | None

    def to_payload(self) -> JSONObject:
        return {"from": self.from_, "to": self.to}

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(f.text(payload, "from"), f.text_or_none(payload, "to"))


@value
class SessionFinished(RecordBase):
    """A successful finish: the `answer` and the finish checks run [{`command`,
    `exit_code`, `passed`}] (a recorded submission of an import: `checks` empty)."""

    KIND = Kind.SESSION_FINISHED
    WRITTEN_BY: ClassVar[str] = "finish_call, importers"

    answer: str
    checks: tuple[JSONObject, ...] = ()

    def to_payload(self) -> JSONObject:
        return {"answer": self.answer, "checks": f.json_list(self.checks)}

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(f.text(payload, "answer"), f.objects(payload, "checks"))


def _origin(obj: JSONObject | None) -> ImportOrigin | ChildOrigin | None:
    return None if obj is None else origin_from_json(obj)
