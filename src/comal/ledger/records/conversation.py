"""Records of the conversation: messages, requests and replies, tool calls and results.

`message` fields hold `comal.messages.message_to_json(...)` output, `usage` fields
`comal.usage.Usage.to_json()` output: plain JSON, which their owners parse.
"""

from __future__ import annotations

from typing import ClassVar, Self

import comal.ledger.records.fields as f
from comal.ledger.entry import Entry
from comal.ledger.records.base import RecordBase
from comal.ledger.records.kinds import Kind
from comal.ledger.records.nested import RecordedMedia, RecordedPermission, RecordedPreparation
from comal.messages import JSONObject, JSONValue, digest_bytes
from comal.values import value


@value
class UserMessage(RecordBase):
    """A user message (the first of a child session is its task)."""

    KIND = Kind.MESSAGE_USER
    WRITTEN_BY: ClassVar[str] = "agent, importers"

    message: JSONObject | None

    def to_payload(self) -> JSONObject:
        return {"message": self.message}

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(f.obj_or_none(payload, "message"))


@value
class AssistantMessage(RecordBase):
    """A finished model reply. `finish` is the normalized finish status; `request_entry` the
    id of its `provider.request` (null in imports). When `finish` is `refusal`, `refusal`
    holds {`text` (what the model said in refusing), `reason` (the wire's `category:
    explanation`, or empty), `details` (the wire's raw explanation, e.g. Anthropic
    `stop_details`, or null), `dropped_calls` (tool calls of the refused reply, never run)}.
    `recovered` is set when the model wrote its tool calls as text and they were taken as
    calls: {`from`: "text", `form` (`json`, `fenced` or `tag`), `text` (the reply's text as
    written; `message` holds the calls in its place)}."""

    KIND = Kind.MESSAGE_ASSISTANT
    WRITTEN_BY: ClassVar[str] = "agent, importers"

    message: JSONObject | None
    wire: str = ""
    model: str = ""
    finish: str = ""
    usage: JSONObject | None = None
    usage_raw: JSONValue = None
    request_entry: str | None = None
    refusal: JSONObject | None = None
    recovered: JSONObject | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "message": self.message,
            "wire": self.wire,
            "model": self.model,
            "finish": self.finish,
            "usage": self.usage,
            "usage_raw": self.usage_raw,
            "request_entry": self.request_entry,
        }
        f.put(payload, "refusal", self.refusal)
        f.put(payload, "recovered", self.recovered)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.obj_or_none(payload, "message"),
            f.text(payload, "wire"),
            f.text(payload, "model"),
            f.text(payload, "finish"),
            f.obj_or_none(payload, "usage"),
            payload.get("usage_raw"),
            f.text_or_none(payload, "request_entry"),
            f.obj_or_none(payload, "refusal"),
            f.obj_or_none(payload, "recovered"),
        )


@value
class SummaryMessage(RecordBase):
    """A peer's own compaction summary, kept as a marked entry (`origin` names it)."""

    KIND = Kind.MESSAGE_SUMMARY
    WRITTEN_BY: ClassVar[str] = "importers"

    text: str
    origin: str | None = None

    def to_payload(self) -> JSONObject:
        return {"text": self.text, "origin": self.origin}

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(f.text(payload, "text"), f.text_or_none(payload, "origin"))


@value
class ProviderRequest(RecordBase):
    """A request about to be sent: `sha256` and `size_bytes` of the exact body, what it was
    built from (`fingerprint` {`model`,`effort`,`tools_digest`,`config_digest`,`checkpoint`},
    the anchor a measurement is matched by), `estimated_input_tokens` and `output_reserve`.
    The replay benchmark records only `model`, `wire` and `fingerprint`."""

    KIND = Kind.PROVIDER_REQUEST
    WRITTEN_BY: ClassVar[str] = "agent, replay"

    model: str
    wire: str = ""
    fingerprint: JSONObject | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    estimated_input_tokens: int | None = None
    output_reserve: int | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {"model": self.model, "wire": self.wire}
        f.put(payload, "fingerprint", self.fingerprint)
        f.put(payload, "sha256", self.sha256)
        f.put(payload, "size_bytes", self.size_bytes)
        f.put(payload, "estimated_input_tokens", self.estimated_input_tokens)
        f.put(payload, "output_reserve", self.output_reserve)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "model"),
            f.text(payload, "wire"),
            f.obj_or_none(payload, "fingerprint"),
            f.text_or_none(payload, "sha256"),
            f.int_or_none(payload, "size_bytes"),
            f.int_or_none(payload, "estimated_input_tokens"),
            f.int_or_none(payload, "output_reserve"),
        )


@value
class ProviderResent(RecordBase):
    """The request of `request_entry` went out again with other bytes (`sha256`, `size_bytes`
    of the exact body POSTed): `reason` `probe` (asked once unstreamed, one output token, to
    learn why a stream came back empty) or `unstreamed` (sent again without streaming to a
    server that answers only so; the reply that follows is that POST's)."""

    KIND = Kind.PROVIDER_RESENT
    WRITTEN_BY: ClassVar[str] = "agent"

    request_entry: str
    reason: str
    sha256: str
    size_bytes: int

    def to_payload(self) -> JSONObject:
        return {
            "request_entry": self.request_entry,
            "reason": self.reason,
            "sha256": self.sha256,
            "size_bytes": self.size_bytes,
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "request_entry"),
            f.text(payload, "reason"),
            f.text(payload, "sha256"),
            f.int_or_none(payload, "size_bytes") or 0,
        )


@value
class ProviderErrorRecord(RecordBase):
    """A provider call that failed: the typed error's `code`, `message` and HTTP `status`
    (null when none)."""

    KIND = Kind.PROVIDER_ERROR
    WRITTEN_BY: ClassVar[str] = "agent"

    code: str
    message: str = ""
    status: int | None = None

    def to_payload(self) -> JSONObject:
        return {"code": self.code, "message": self.message, "status": self.status}

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "code"), f.text(payload, "message"), f.int_or_none(payload, "status")
        )


@value
class ResponseDiscardedRecord(RecordBase):
    """An unfinished reply: `reason` (`OUTPUT_LENGTH`), `message` (the partial reply),
    `usage`, `output_reserve` (the output the cut request asked for) — none of its tool
    calls run; optional `entry` (id of a `message.assistant` it supersedes, left out of the
    view) and, in the replay benchmark, `request_entry`."""

    KIND = Kind.RESPONSE_DISCARDED
    WRITTEN_BY: ClassVar[str] = "context engine, replay"

    reason: str
    message: JSONObject | None
    usage: JSONObject | None = None
    output_reserve: int | None = None
    entry: str | None = None
    request_entry: str | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "reason": self.reason,
            "message": self.message,
            "usage": self.usage,
            "output_reserve": self.output_reserve,
        }
        f.put(payload, "entry", self.entry)
        f.put(payload, "request_entry", self.request_entry)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "reason"),
            f.obj_or_none(payload, "message"),
            f.obj_or_none(payload, "usage"),
            f.int_or_none(payload, "output_reserve"),
            f.text_or_none(payload, "entry"),
            f.text_or_none(payload, "request_entry"),
        )


@value
class ToolStartedRecord(RecordBase):
    """A call about to run (written **before** the tool runs): `permission` {`decision`,
    `mode` (`uncertain-repeat` for the insistence guard's verdict on re-issuing an uncertain
    call; `imported` for a call an imported session's peer started and left running — resume
    rebuilds it from its child), `reason`}; optional `preparation` {`path`, `abs_path`,
    `digest_before` (null when absent), `digest_intended`, optional `intent` (a plugin
    tool's declared intent)} and then `body`: the exact bytes the file held before (what a
    rewind restores)."""

    KIND = Kind.TOOL_STARTED
    WRITTEN_BY: ClassVar[str] = "agent, importers"

    call_id: str | None
    name: str | None
    arguments: JSONObject
    permission: RecordedPermission
    preparation: RecordedPreparation | None = None
    body: JSONObject | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "permission": self.permission.to_json(),
        }
        prep = self.preparation
        f.put(payload, "preparation", None if prep is None else prep.to_json())
        f.put(payload, "body", self.body)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text_or_none(payload, "call_id"),
            f.text_or_none(payload, "name"),
            f.obj(payload, "arguments"),
            RecordedPermission.from_json(f.obj(payload, "permission")),
            _preparation(f.obj_or_none(payload, "preparation")),
            f.obj_or_none(payload, "body"),
        )


@value
class ToolResult(RecordBase):
    """A call's result: `status` (`ok`, `error`, `denied`, `uncertain`, `cancelled`,
    `postcondition_observed`, `repeated` (a plugin's known reads made again by recovery)),
    `exit_code` (null when none), `body` (the exact output bytes as a blob), its
    `size_bytes` and `digest`; optional `media` [{`media_type`, `data_b64` or `blob`,
    `size_bytes`, `digest`}], optional `cut` {`limit_bytes`, `total_bytes`} (only the first
    `limit_bytes` of the output were kept), optional `observed` (recovery's fresh read:
    `postcondition_observed`, `detail`, and for Write/Edit `path`, `digest_before`,
    `digest_intended`, `current_digest`, `readable`; a plugin tool's own facts), optional
    `exit_code_in_output` (true: the output's own text states the exit code, as an imported
    observation such as mini-swe-agent's `<returncode>` does, so the view adds no line for it)."""

    KIND = Kind.TOOL_RESULT
    WRITTEN_BY: ClassVar[str] = "agent, recovery, importers"

    call_id: str | None
    name: str | None
    status: str | None
    is_error: bool
    exit_code: int | None
    size_bytes: int | None
    digest: str | None
    media: tuple[RecordedMedia, ...] | None = None
    observed: JSONObject | None = None
    cut: JSONObject | None = None
    body: JSONObject | None = None
    exit_code_in_output: bool | None = None

    @classmethod
    def for_output(
        cls,
        call_id: str,
        name: str,
        output: bytes,
        *,
        status: str,
        is_error: bool,
        exit_code: int | None = None,
        media: tuple[RecordedMedia, ...] | None = None,
        observed: JSONObject | None = None,
        cut: JSONObject | None = None,
        exit_code_in_output: bool = False,
    ) -> Self:
        """The result of a call whose output bytes are `output` (kept as the entry's body)."""
        return cls(
            call_id,
            name,
            status,
            is_error,
            exit_code,
            len(output),
            digest_bytes(output),
            media,
            observed,
            cut,
            exit_code_in_output=exit_code_in_output or None,
        )

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "call_id": self.call_id,
            "name": self.name,
            "status": self.status,
            "is_error": self.is_error,
            "exit_code": self.exit_code,
            "size_bytes": self.size_bytes,
            "digest": self.digest,
        }
        media = self.media
        f.put(payload, "media", None if media is None else [m.to_json() for m in media])
        f.put(payload, "observed", self.observed)
        f.put(payload, "cut", self.cut)
        f.put(payload, "body", self.body)
        f.put(payload, "exit_code_in_output", self.exit_code_in_output)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text_or_none(payload, "call_id"),
            f.text_or_none(payload, "name"),
            f.text_or_none(payload, "status"),
            # Truthiness, as every reader took it (a recorded 1 is an error too).
            bool(payload.get("is_error")),
            f.int_or_none(payload, "exit_code"),
            f.int_or_none(payload, "size_bytes"),
            f.text_or_none(payload, "digest"),
            _media(f.objects_or_none(payload, "media")),
            f.obj_or_none(payload, "observed"),
            f.obj_or_none(payload, "cut"),
            f.obj_or_none(payload, "body"),
            f.flag_or_none(payload, "exit_code_in_output"),
        )


def _preparation(obj: JSONObject | None) -> RecordedPreparation | None:
    return None if obj is None else RecordedPreparation.from_json(obj)


def _media(objs: tuple[JSONObject, ...] | None) -> tuple[RecordedMedia, ...] | None:
    return None if objs is None else tuple(RecordedMedia.from_json(obj) for obj in objs)


def ran_call_of(entry: Entry) -> tuple[str | None, JSONObject]:
    """The `name` and `arguments` of a `tool.started` entry, read alone: a derivation reads
    them for every call of the session (`ToolStartedRecord` reads them the same way)."""
    payload = entry.payload
    return f.text_or_none(payload, "name"), f.obj(payload, "arguments")


def call_id_of(entry: Entry) -> str | None:
    """The `call_id` of a `tool.started` or `tool.result` entry, read alone: the pairing reads
    every such entry's id first, most of them never read whole (`ToolStartedRecord` and `ToolResult`
    read it the same way)."""
    return f.text_or_none(entry.payload, "call_id")
