"""Anchors and calibration: measured input tokens tied to one request, and how far to trust them.

An *anchor* is the input a provider measured (`usage.new_input + cache_read + cache_write`) for
the request recorded in a `provider.request` entry. While nothing earlier in the view changed,
the current input is that measurement plus an estimate of what was appended after the request.
The anchor is invalid when the request's fingerprint (model, effort, tool catalog digest,
configuration digest, checkpoint) differs from the current one, or when a pressure event
(projection, checkpoint) or a recalibration from a CONTEXT_LENGTH error came after it.

Calibration is the ratio measured/counted for one model, recorded as `context.calibrated`
entries; the latest one for the model applies. Both are read from entries only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from comal.ledger.entry import Entry
from comal.ledger.records import AssistantMessage, ContextCalibrated, Kind, ProviderRequest
from comal.ledger.records import fields as f
from comal.messages import JSONObject, JSONValue, ToolSpec, canonical_json

PRESSURE_KINDS = frozenset({Kind.PROJECTION, Kind.CHECKPOINT})


def tools_digest(specs: Sequence[ToolSpec]) -> str:
    """Digest of a tool catalog (same formula the agent records in request fingerprints)."""
    blob = canonical_json([{"name": s.name, "d": s.description, "p": s.parameters} for s in specs])
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What a measured input depends on. A None digest or effort means "not known here"."""

    model: str
    effort: str | None = None
    tools_digest: str | None = None
    config_digest: str | None = None
    checkpoint: int | None = None
    compare_effort: bool = False
    """Whether `effort` was given by the caller (None is then a real value, not unknown)."""

    def with_checkpoint(self, number: int | None) -> Fingerprint:
        """The same fingerprint for a view under checkpoint `number`."""
        return replace(self, checkpoint=number)

    def to_json(self) -> JSONObject:
        """The `provider.request` payload form."""
        return {
            "model": self.model,
            "effort": self.effort,
            "tools_digest": self.tools_digest,
            "config_digest": self.config_digest,
            "checkpoint": self.checkpoint,
        }

    def matches(self, recorded: JSONValue) -> bool:
        """Whether a recorded fingerprint describes a request made under this one."""
        if not isinstance(recorded, dict):
            return False
        if recorded.get("model") != self.model or recorded.get("checkpoint") != self.checkpoint:
            return False
        if self.compare_effort and recorded.get("effort") != self.effort:
            return False
        for key, mine in (
            ("tools_digest", self.tools_digest),
            ("config_digest", self.config_digest),
        ):
            if mine is not None and recorded.get(key) != mine:
                return False
        return True


@dataclass(frozen=True, slots=True)
class Anchor:
    """A provider-measured input size for one recorded request."""

    request_id: str
    request_seq: int
    assistant_id: str
    measured_tokens: int


def measured_input(payload: JSONObject) -> int | None:
    """new_input + cache_read + cache_write of a recorded reply's usage, or None when unknown."""
    return measured_reply(AssistantMessage.from_payload(payload))


def measured_reply(reply: AssistantMessage) -> int | None:
    """As `measured_input`, of a reply's record."""
    usage = reply.usage
    if usage is None:
        return None
    new = f.int_or_none(usage, "new_input")
    if new is None:
        return None
    return new + f.integer(usage, "cache_read") + f.integer(usage, "cache_write")


def _invalidates(entry: Entry) -> bool:
    """Whether earlier measurements no longer describe the view after `entry`."""
    return entry.kind in PRESSURE_KINDS or (
        entry.kind == Kind.CONTEXT_CALIBRATED
        and ContextCalibrated.from_entry(entry).source == "context_length"
    )


@dataclass(slots=True)
class AnchorIndex:
    """What finding an anchor needs from a session, kept up to date as entries are appended.

    Only entries after the latest invalidating one count: the requests among them by id and
    the assistant messages that carry a measured input, in ledger order. An engine feeds it
    each new entry once instead of rescanning the session for every request.
    """

    floor: int = 0
    requests: dict[str, Entry] = field(default_factory=dict)
    measured: list[tuple[Entry, int]] = field(default_factory=list)

    def extend(self, entries: Iterable[Entry]) -> AnchorIndex:
        """Take in `entries` (newer than any seen before, in ledger order)."""
        for entry in entries:
            if _invalidates(entry):
                self.floor = entry.seq
                self.requests.clear()
                self.measured.clear()
            elif entry.kind == Kind.PROVIDER_REQUEST:
                self.requests[entry.id] = entry
            elif entry.kind == Kind.MESSAGE_ASSISTANT:
                value = measured_reply(AssistantMessage.from_entry(entry))
                if value is not None:
                    self.measured.append((entry, value))
        return self

    def find(self, current: Fingerprint) -> Anchor | None:
        """The newest valid anchor for a request carrying `current`, or None."""
        for entry, value in reversed(self.measured):
            request_id = AssistantMessage.from_entry(entry).request_entry
            request = None if request_id is None else self.requests.get(request_id)
            if request is None:
                continue
            if not current.matches(ProviderRequest.from_entry(request).fingerprint):
                # A mismatch on the newest measured request means the conditions changed since.
                return None
            return Anchor(request.id, request.seq, entry.id, value)
        return None


def calibration_ratio(entries: Sequence[Entry], model: str) -> float:
    """The latest measured/counted ratio recorded for `model` (1.0 when none)."""
    for entry in reversed(entries):
        if entry.kind != Kind.CONTEXT_CALIBRATED:
            continue
        calibrated = ContextCalibrated.from_entry(entry)
        if calibrated.model == model and calibrated.ratio is not None and calibrated.ratio > 0:
            return float(calibrated.ratio)
    return 1.0
