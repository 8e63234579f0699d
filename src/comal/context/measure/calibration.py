"""Calibration: how far local counts are from what providers measure, learnt from the ledger.

Two sources, each recorded as a `context.calibrated` entry (the latest for a model applies):
- `usage`: the input a provider measured for a request this engine prepared, against the local
  count of that same request (recorded only for estimating counters, and only when it moves
  the ratio by more than 5 %);
- `context_length`: a provider refused the input; the numbers in the error (or, without them, the
  smallest size consistent with the refusal) become the measurement. This also invalidates
  earlier anchors, so the next `prepare()` relieves pressure from calibrated counts. When the
  error states the provider's real limit (`limit_tokens`) and it is below the configured
  window, the payload records it; from then on the session's window is the smaller of the two
  (`provider_window`), read back from the ledger so a resumed session and `comal context`
  budget with it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from comal.context.measure.anchors import measured_reply
from comal.errors import ContextLengthError
from comal.ledger.entry import Entry
from comal.ledger.records import AssistantMessage, ContextCalibrated, Kind

RECALIBRATE_SHIFT = 0.05


def measured_after(entries: Sequence[Entry], prepared_at: int) -> tuple[bool, int | None]:
    """The measured input of the first request recorded after seq `prepared_at`.

    Returns:
        (whether its response is recorded yet, the measured input or None when unknown).
    """
    request = next(
        (e for e in entries if e.kind == Kind.PROVIDER_REQUEST and e.seq > prepared_at), None
    )
    if request is None:
        return False, None
    for entry in entries:
        if entry.kind != Kind.MESSAGE_ASSISTANT:
            continue
        reply = AssistantMessage.from_entry(entry)
        if reply.request_entry == request.id:
            return True, measured_reply(reply)
    return False, None


def refused_size(error: ContextLengthError, window: int) -> int:
    """The input size a CONTEXT_LENGTH refusal proves (a lower bound without numbers)."""
    limit = error.limit_tokens or window
    if error.reported_tokens is not None:
        return error.reported_tokens
    if error.fixable_by_output_reserve and error.requested_output_tokens is not None:
        return limit - error.requested_output_tokens + 1
    return limit + 1


PROVIDER_WINDOW_SOURCE = "provider error"
"""The window source shown once a provider's refusal stated a limit below the configured one."""


def calibration_record(
    model: str,
    ratio: float,
    measured: int,
    counted: int,
    source: str,
    limit: int | None = None,
) -> ContextCalibrated:
    """The `context.calibrated` record (`limit_tokens` only when a provider stated one)."""
    return ContextCalibrated(model, round(ratio, 4), measured, counted, source, limit)


def provider_window(entries: Sequence[Entry], model: str, configured: int) -> tuple[int, bool]:
    """The window to budget with: the configured one, or a smaller limit a provider stated.

    Returns:
        (window tokens, whether a provider's stated limit set it).
    """
    window, limited = configured, False
    for entry in entries:
        if entry.kind != Kind.CONTEXT_CALIBRATED:
            continue
        calibrated = ContextCalibrated.from_entry(entry)
        limit = calibrated.limit_tokens
        if calibrated.model != model:
            continue
        if limit is not None and 0 < limit < window:
            window, limited = limit, True
    return window, limited


def usage_calibration(
    entries: Sequence[Entry], last_counted: tuple[int, int], model: str, current: float
) -> ContextCalibrated | Literal[False] | None:
    """The `usage` calibration owed for the last prepared request.

    Args:
        entries: the session's entries.
        last_counted: (seq the request was prepared at, its local count).
        model: the model.
        current: the ratio in force.

    Returns:
        None while the response is not recorded yet; False when it is but nothing needs
        recording; otherwise the `context.calibrated` record to append.
    """
    prepared_at, counted = last_counted
    answered, measured = measured_after(entries, prepared_at)
    if not answered:
        return None
    if measured is None or counted <= 0:
        return False
    ratio = measured / counted
    if abs(ratio / current - 1) <= RECALIBRATE_SHIFT:
        return False
    return calibration_record(model, ratio, measured, counted, "usage")


def server_count_record(
    model: str, measured: int, counted: int, ratio_in_force: float
) -> ContextCalibrated | None:
    """The `context.calibrated` record for a server's exact count of a request counted
    locally as `counted`; None when the count is unusable or moves the ratio by 5 % or less.

    A count is a measurement, so the ratio follows it up or down.
    """
    if measured <= 0 or counted <= 0:
        return None
    ratio = measured / counted
    if abs(ratio / ratio_in_force - 1) <= RECALIBRATE_SHIFT:
        return None
    return calibration_record(model, ratio, measured, counted, "server_count")


def context_length_record(
    model: str, error: ContextLengthError, counted: int, window: int, ratio_in_force: float
) -> ContextCalibrated:
    """The `context.calibrated` record a CONTEXT_LENGTH refusal of a request counted locally
    as `counted` proves, with the limit it states when that is below `window`."""
    measured = refused_size(error, window)
    # A count the provider reported is a measurement: the ratio follows it either way. A
    # refusal without numbers only proves a lower bound, so the ratio can only grow.
    ratio = measured / max(counted, 1)
    if error.reported_tokens is None:
        ratio = max(ratio, ratio_in_force)
    limit = error.limit_tokens
    stated = limit if limit is not None and 0 < limit < window else None
    return calibration_record(model, ratio, measured, counted, "context_length", stated)
