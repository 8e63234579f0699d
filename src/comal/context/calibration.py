"""Calibration: how far local counts are from what providers measure, learnt from the ledger.

Two sources, each recorded as a `context.calibrated` entry (the latest for a model applies):
- `usage`: the input a provider measured for a request this engine prepared, against the local
  count of that same request (recorded only for estimating counters, and only when it moves
  the ratio by more than 5 %);
- `context_length`: a provider refused the input; the numbers in the error (or, without them, the
  smallest size consistent with the refusal) become the measurement. This also invalidates
  earlier anchors, so the next `prepare()` relieves pressure from calibrated counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from comal.context.anchors import measured_input
from comal.errors import ContextLengthError
from comal.ledger.entry import Entry
from comal.messages import JSONObject

RECALIBRATE_SHIFT = 0.05


def measured_after(entries: Sequence[Entry], prepared_at: int) -> tuple[bool, int | None]:
    """The measured input of the first request recorded after seq `prepared_at`.

    Returns:
        (whether its response is recorded yet, the measured input or None when unknown).
    """
    request = next(
        (e for e in entries if e.kind == "provider.request" and e.seq > prepared_at), None
    )
    if request is None:
        return False, None
    for entry in entries:
        if entry.kind == "message.assistant" and entry.payload.get("request_entry") == request.id:
            return True, measured_input(entry.payload)
    return False, None


def refused_size(error: ContextLengthError, window: int) -> int:
    """The input size a CONTEXT_LENGTH refusal proves (a lower bound without numbers)."""
    limit = error.limit_tokens or window
    if error.reported_tokens is not None:
        return error.reported_tokens
    if error.fixable_by_output_reserve and error.requested_output_tokens is not None:
        return limit - error.requested_output_tokens + 1
    return limit + 1


def calibration_payload(
    model: str, ratio: float, measured: int, counted: int, source: str
) -> JSONObject:
    """The `context.calibrated` payload."""
    return {
        "model": model,
        "ratio": round(ratio, 4),
        "measured_tokens": measured,
        "estimated_tokens": counted,
        "source": source,
    }


def usage_calibration(
    entries: Sequence[Entry], last_counted: tuple[int, int], model: str, current: float
) -> JSONObject | None:
    """The `usage` calibration owed for the last prepared request.

    Args:
        entries: the session's entries.
        last_counted: (seq the request was prepared at, its local count).
        model: the model.
        current: the ratio in force.

    Returns:
        None while the response is not recorded yet; `{}` when it is but nothing needs
        recording; otherwise the `context.calibrated` payload to append.
    """
    prepared_at, counted = last_counted
    answered, measured = measured_after(entries, prepared_at)
    if not answered:
        return None
    if measured is None or counted <= 0:
        return {}
    ratio = measured / counted
    if abs(ratio / current - 1) <= RECALIBRATE_SHIFT:
        return {}
    return calibration_payload(model, ratio, measured, counted, "usage")
