"""The objects nested in payloads, typed: a session's `window` and `origin`, a call's
`permission` and `preparation`, a result's `media`.

Like a record, each is read tolerantly and written exactly: `from_json(obj)` never raises (a
missing or wrongly typed key reads as the default its field names), and `to_json()` gives back
the object Comal wrote, so `from_json(x).to_json()` is `x` for every object of the shape, and
the ledger's bytes stay the same. A key written as null is a field typed `… | None` that is
always written; a key that may be absent is a field whose None leaves it out (its docstring
says so).
"""

from __future__ import annotations

from typing import Self

import comal.ledger.records.fields as f
from comal.messages import JSONObject
from comal.values import value


@value
class RecordedWindow:
    """The context window a session runs with: `tokens` (null: unknown, as in imports) and
    `source` (`config`, `catalog`, `server`, `bench`, …; None: absent in the entry)."""

    tokens: int | None
    source: str | None

    @classmethod
    def from_json(cls, obj: JSONObject) -> Self:
        """The window an object holds."""
        return cls(f.int_or_none(obj, "tokens"), f.text_or_none(obj, "source"))

    def to_json(self) -> JSONObject:
        """The object as recorded."""
        out: JSONObject = {"tokens": self.tokens}
        f.put(out, "source", self.source)
        return out


@value
class RecordedPermission:
    """The permission decision a call ran under: `decision` (`allow`, `deny`, `ask`), `mode`
    (the permission mode, `uncertain-repeat`, `imported`, `validation`, …) and `reason`."""

    decision: str
    mode: str
    reason: str

    @classmethod
    def from_json(cls, obj: JSONObject) -> Self:
        """The decision an object holds ("" for a missing key)."""
        return cls(f.text(obj, "decision"), f.text(obj, "mode"), f.text(obj, "reason"))

    def to_json(self) -> JSONObject:
        """The object as recorded."""
        return {"decision": self.decision, "mode": self.mode, "reason": self.reason}


@value
class RecordedPreparation:
    """A Write/Edit's durable preparation: `path` (as given), `abs_path` (resolved),
    `digest_before` (null: the file did not exist), `digest_intended`, `intent` (a plugin
    tool's declared intent; None: absent). A damaged entry reads `abs_path` or
    `digest_intended` as None: no usable preparation."""

    path: str
    abs_path: str | None
    digest_before: str | None
    digest_intended: str | None
    intent: JSONObject | None = None

    @classmethod
    def from_json(cls, obj: JSONObject) -> Self:
        """The preparation an object holds."""
        return cls(
            f.text(obj, "path"),
            f.text_or_none(obj, "abs_path"),
            f.text_or_none(obj, "digest_before"),
            f.text_or_none(obj, "digest_intended"),
            f.obj_or_none(obj, "intent"),
        )

    def to_json(self) -> JSONObject:
        """The object as recorded."""
        out: JSONObject = {
            "path": self.path,
            "abs_path": self.abs_path,
            "digest_before": self.digest_before,
            "digest_intended": self.digest_intended,
        }
        f.put(out, "intent", self.intent)
        return out


@value
class RecordedMedia:
    """One image of a tool result: `media_type`, its bytes inline (`data_b64`) or as a blob
    (`blob`), `size_bytes` and `digest` (each None: absent; imports keep no `digest`)."""

    media_type: str | None
    data_b64: str | None = None
    blob: str | None = None
    size_bytes: int | None = None
    digest: str | None = None

    @classmethod
    def from_json(cls, obj: JSONObject) -> Self:
        """The media an object holds."""
        return cls(
            f.text_or_none(obj, "media_type"),
            f.text_or_none(obj, "data_b64"),
            f.text_or_none(obj, "blob"),
            f.int_or_none(obj, "size_bytes"),
            f.text_or_none(obj, "digest"),
        )

    def to_json(self) -> JSONObject:
        """The object as recorded."""
        out: JSONObject = {}
        f.put(out, "media_type", self.media_type)
        f.put(out, "data_b64", self.data_b64)
        f.put(out, "blob", self.blob)
        f.put(out, "size_bytes", self.size_bytes)
        f.put(out, "digest", self.digest)
        return out


@value
class ImportOrigin:
    """Where an imported session comes from: the `file`, its `label`, the peer's session `id`
    (null when it names none), the file's `sha256` and the session's `index` in it (re-imports
    are matched by both), `parent_call` (a sub-agent: the parent's call that ran it, else
    null), `compaction` (the peer's own compaction call)."""

    file: str
    label: str
    id: str | None
    sha256: str
    index: int | None
    parent_call: str | None
    compaction: bool

    @classmethod
    def from_json(cls, obj: JSONObject) -> Self:
        """The origin an object holds."""
        return cls(
            f.text(obj, "file"),
            f.text(obj, "label"),
            f.text_or_none(obj, "id"),
            f.text(obj, "sha256"),
            f.int_or_none(obj, "index"),
            f.text_or_none(obj, "parent_call"),
            f.flag(obj, "compaction"),
        )

    def to_json(self) -> JSONObject:
        """The object as recorded."""
        return {
            "file": self.file,
            "label": self.label,
            "id": self.id,
            "sha256": self.sha256,
            "index": self.index,
            "parent_call": self.parent_call,
            "compaction": self.compaction,
        }


@value
class ChildOrigin:
    """Where a child session comes from: the `parent_session`, its `parent_call` that ran the
    child, the task's `kind` (`task`, `step`, `draft`) and `key`."""

    parent_session: str
    parent_call: str
    kind: str
    key: str

    @classmethod
    def from_json(cls, obj: JSONObject) -> Self:
        """The origin an object holds."""
        return cls(
            f.text(obj, "parent_session"),
            f.text(obj, "parent_call"),
            f.text(obj, "kind"),
            f.text(obj, "key"),
        )

    def to_json(self) -> JSONObject:
        """The object as recorded."""
        return {
            "parent_session": self.parent_session,
            "parent_call": self.parent_call,
            "kind": self.kind,
            "key": self.key,
        }


def origin_from_json(obj: JSONObject) -> ImportOrigin | ChildOrigin:
    """The origin an object holds: a child's names its `parent_session`, an import's does not."""
    return ChildOrigin.from_json(obj) if "parent_session" in obj else ImportOrigin.from_json(obj)
