"""Records of the context engine and the board: relief, calibration, compaction requests.

`options` fields list each option the cost model weighed: {`action`, `after_tokens`,
`resent_tokens`, `cost_per_call`, `results_out_of_view`, `viable`, `why`}.
"""

from __future__ import annotations

from typing import ClassVar, Self

import comal.ledger.records.fields as f
from comal.ledger.records.base import RecordBase
from comal.ledger.records.kinds import Kind
from comal.messages import JSONObject
from comal.values import value


@value
class ProjectionRecord(RecordBase):
    """Results shown as references from now on: `result_ids` (the `tool.result` entries the
    view references; `call_ids` their calls), optional `media_result_ids` (results whose
    images are shown by reference: reason `media_reserve` past the media reserve,
    `media_pressure` under pressure), `trigger` (`threshold`, `turn_boundary`,
    `cache_cold`), the estimated request `before_tokens` and `after_tokens`."""

    KIND = Kind.PROJECTION
    WRITTEN_BY: ClassVar[str] = "context engine"

    call_ids: tuple[str, ...]
    result_ids: tuple[str, ...]
    reason: str
    before_tokens: int | None
    after_tokens: int | None
    target_tokens: int | None = None
    resent_tokens: int | None = None
    trigger: str | None = None
    options: tuple[JSONObject, ...] | None = None
    media_result_ids: tuple[str, ...] | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "call_ids": f.json_list(self.call_ids),
            "result_ids": f.json_list(self.result_ids),
            "reason": self.reason,
            "before_tokens": self.before_tokens,
            "after_tokens": self.after_tokens,
        }
        media = self.media_result_ids
        f.put(payload, "media_result_ids", None if media is None else f.json_list(media))
        f.put(payload, "target_tokens", self.target_tokens)
        f.put(payload, "resent_tokens", self.resent_tokens)
        f.put(payload, "trigger", self.trigger)
        f.put(payload, "options", None if self.options is None else f.json_list(self.options))
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.strings(payload, "call_ids"),
            f.strings(payload, "result_ids"),
            f.text(payload, "reason"),
            f.int_or_none(payload, "before_tokens"),
            f.int_or_none(payload, "after_tokens"),
            f.int_or_none(payload, "target_tokens"),
            f.int_or_none(payload, "resent_tokens"),
            f.text_or_none(payload, "trigger"),
            f.objects_or_none(payload, "options"),
            f.strings_or_none(payload, "media_result_ids"),
        )


@value
class CheckpointRecord(RecordBase):
    """A derived checkpoint: `text` (as the model sees it) replaces the history through
    `covers_through_seq`; the verbatim tail starts at `tail_from_seq`, its
    `projected_result_ids` shown as references; `by` (`user`, `pressure`, or another reason),
    `trigger` (what placed it: `threshold`, `turn_boundary`, `cache_cold`, or `by` again),
    the estimated request `before_tokens` and `after_tokens` and the budget's figures."""

    KIND = Kind.CHECKPOINT
    WRITTEN_BY: ClassVar[str] = "context engine"

    number: int | None
    title: str
    text: str
    covers_through_seq: int
    tail_from_seq: int
    projected_result_ids: tuple[str, ...]
    before_tokens: int | None
    after_tokens: int | None
    target_tokens: int
    threshold_tokens: int | None
    usable_tokens: int | None
    by: str
    trigger: str
    options: tuple[JSONObject, ...]

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "number": self.number,
            "title": self.title,
            "text": self.text,
            "covers_through_seq": self.covers_through_seq,
            "tail_from_seq": self.tail_from_seq,
            "projected_result_ids": f.json_list(self.projected_result_ids),
            "before_tokens": self.before_tokens,
            "after_tokens": self.after_tokens,
            "target_tokens": self.target_tokens,
            "by": self.by,
            "trigger": self.trigger,
            "options": f.json_list(self.options),
        }
        f.put(payload, "threshold_tokens", self.threshold_tokens)
        f.put(payload, "usable_tokens", self.usable_tokens)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.int_or_none(payload, "number"),
            f.text(payload, "title"),
            f.text(payload, "text"),
            f.integer(payload, "covers_through_seq"),
            f.integer(payload, "tail_from_seq"),
            f.strings(payload, "projected_result_ids"),
            f.int_or_none(payload, "before_tokens"),
            f.int_or_none(payload, "after_tokens"),
            f.integer(payload, "target_tokens"),
            f.int_or_none(payload, "threshold_tokens"),
            f.int_or_none(payload, "usable_tokens"),
            f.text(payload, "by"),
            f.text(payload, "trigger"),
            f.objects(payload, "options"),
        )


@value
class PressureDeferred(RecordBase):
    """A request past the threshold mid tool loop waits for the turn boundary (once per
    turn; the view never reads it): `trigger` (`threshold`), `until` (`turn_boundary`),
    `remaining_calls` (the rest of the turn as the session's finished turns measured it),
    `need_tokens` (what those calls append), `options` (`defer` and the `checkpoint` it
    replaces)."""

    KIND = Kind.PRESSURE_DEFERRED
    WRITTEN_BY: ClassVar[str] = "context engine"

    trigger: str
    until: str
    before_tokens: int
    threshold_tokens: int
    usable_tokens: int
    remaining_calls: int
    need_tokens: int
    options: tuple[JSONObject, ...]

    def to_payload(self) -> JSONObject:
        return {
            "trigger": self.trigger,
            "until": self.until,
            "before_tokens": self.before_tokens,
            "threshold_tokens": self.threshold_tokens,
            "usable_tokens": self.usable_tokens,
            "remaining_calls": self.remaining_calls,
            "need_tokens": self.need_tokens,
            "options": f.json_list(self.options),
        }

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "trigger"),
            f.text(payload, "until"),
            f.integer(payload, "before_tokens"),
            f.integer(payload, "threshold_tokens"),
            f.integer(payload, "usable_tokens"),
            f.integer(payload, "remaining_calls"),
            f.integer(payload, "need_tokens"),
            f.objects(payload, "options"),
        )


@value
class ContextCalibrated(RecordBase):
    """The measured/estimated token ratio of one model: `source` (`usage`, `server_count`,
    or `context_length`, which also invalidates earlier anchors); `limit_tokens` (optional:
    the window a provider's refusal stated, when below the configured one; the budget then
    uses it)."""

    KIND = Kind.CONTEXT_CALIBRATED
    WRITTEN_BY: ClassVar[str] = "context engine"

    model: str
    ratio: float | None
    measured_tokens: int
    estimated_tokens: int
    source: str
    limit_tokens: int | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {
            "model": self.model,
            "ratio": self.ratio,
            "measured_tokens": self.measured_tokens,
            "estimated_tokens": self.estimated_tokens,
            "source": self.source,
        }
        f.put(payload, "limit_tokens", self.limit_tokens)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "model"),
            f.number_or_none(payload, "ratio"),
            f.integer(payload, "measured_tokens"),
            f.integer(payload, "estimated_tokens"),
            f.text(payload, "source"),
            f.int_or_none(payload, "limit_tokens"),
        )


@value
class BoardUpdated(RecordBase):
    """The whole board after a change: `criteria` [{`id`, `text`, `status` (`pending`,
    `in_progress`, `done`, `blocked`), `check` (or null)}]."""

    KIND = Kind.BOARD_UPDATED
    WRITTEN_BY: ClassVar[str] = "board tool"

    criteria: tuple[JSONObject, ...]

    def to_payload(self) -> JSONObject:
        return {"criteria": f.json_list(self.criteria)}

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(f.objects(payload, "criteria"))


@value
class CompactRequested(RecordBase):
    """A person asked for a compaction (`by`); it is derived at the next turn boundary."""

    KIND = Kind.COMPACT_REQUESTED
    WRITTEN_BY: ClassVar[str] = "CLI `compact`, TUI `/compact`"

    by: str | None

    def to_payload(self) -> JSONObject:
        return {"by": self.by}

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(f.text_or_none(payload, "by"))


@value
class CompactCancelled(RecordBase):
    """Drops a `compact.requested` not yet derived: Esc in the TUI (`by: user`), or a
    person's compaction refused because it would not make the view smaller (`by: engine`,
    `reason: not_smaller`, `requested_by`, and the estimated request now and with the
    checkpoint, `before_tokens` and `after_tokens`; also recorded for a refused immediate
    `/compact` or `comal compact`)."""

    KIND = Kind.COMPACT_CANCELLED
    WRITTEN_BY: ClassVar[str] = "TUI, context engine"

    by: str
    reason: str | None = None
    requested_by: str | None = None
    before_tokens: int | None = None
    after_tokens: int | None = None

    def to_payload(self) -> JSONObject:
        payload: JSONObject = {"by": self.by}
        f.put(payload, "reason", self.reason)
        f.put(payload, "requested_by", self.requested_by)
        f.put(payload, "before_tokens", self.before_tokens)
        f.put(payload, "after_tokens", self.after_tokens)
        return payload

    @classmethod
    def from_payload(cls, payload: JSONObject) -> Self:
        return cls(
            f.text(payload, "by"),
            f.text_or_none(payload, "reason"),
            f.text_or_none(payload, "requested_by"),
            f.int_or_none(payload, "before_tokens"),
            f.int_or_none(payload, "after_tokens"),
        )
