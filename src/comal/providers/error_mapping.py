"""Classify provider failures into the typed `ProviderError` tree, for every wire and server.

Context overflow is recognised by code (`context_length_exceeded`) *or* by message, because
OpenAI-compatible servers copy the text but not the code (DeepSeek, vLLM, llama.cpp, Gemini's
compatibility layer). The numbers in the message are parsed when present. An overflow caused by
the requested output (Anthropic "input length and `max_tokens` exceed context limit", vLLM
"input tokens plus max_tokens") is marked `fixable_by_output_reserve`: lowering the output
reserve fixes it, compaction does not need to. Secrets passed in `secrets` never appear in the
message or the raw body kept on the error.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from comal.errors import (
    AuthError,
    ContextLengthError,
    InvalidRequestError,
    NetworkError,
    OverloadedError,
    ProviderError,
    RateLimitError,
)
from comal.messages import JSONObject, JSONValue

_OVERFLOW_SUBSTRINGS = (
    # LiteLLM's `is_error_str_context_window_exceeded` list (MIT), plus the Responses and
    # Anthropic forms.
    "exceed context limit",
    "this model's maximum context length is",
    "requested token count exceeds the model's maximum context length",
    "model's maximum context limit",
    "is longer than the model's context length",
    "input tokens exceed the configured limit",
    "`inputs` tokens + `max_new_tokens` must be",
    "exceeds the available context size",
    "exceeds the maximum number of tokens allowed",
    '"code": "context_length_exceeded"',
    "prompt is too long",
    "your input exceeds the context window",
    "maximum context length is",
)
_OVERFLOW_REGEXES = (
    re.compile(r"current length is \d+ while limit is \d+"),
    re.compile(r"maximum input length is \d+ tokens"),
    re.compile(r"input too long: \d+ input tokens, limit is"),
)
_OVERFLOW_CODES = {"context_length_exceeded", "exceed_context_size_error", "request_too_large"}
_NOT_OVERFLOW = "string_above_max_length"

_NUM = r"([\d,]+)"

_VALIDATION = re.compile(r"\b\d+ validation errors?\b|\bvalidation error for\b", re.IGNORECASE)
"""Pydantic's summary line, which FastAPI-based servers (llama-cpp-python) return as the message
of a 500 or 422 when the request body does not fit their schema."""
_WRONG_ENDPOINT = {404: "Not Found", 405: "Method Not Allowed", 501: "Not Implemented"}
"""Statuses that mean nothing answers this wire at this URL: a wrong wire or base URL."""


@dataclass(frozen=True, slots=True)
class _Form:
    """One overflow message form and which capture group means what."""

    pattern: re.Pattern[str]
    limit: int | None
    reported: int | None
    output: int | None
    output_only: bool = False
    """True when the form itself says the output request is the problem."""


_FORMS = (
    _Form(
        re.compile(rf"exceed context limit: {_NUM} \+ {_NUM} > {_NUM}"), 3, 1, 2, output_only=True
    ),
    _Form(
        re.compile(
            rf"too large: {_NUM}\. this model's maximum context length is {_NUM} tokens and "
            rf"your request has {_NUM} input tokens"
        ),
        2,
        3,
        1,
    ),
    _Form(
        re.compile(
            rf"maximum context length is {_NUM} tokens\. however, you requested {_NUM} tokens "
            rf"\({_NUM} in the messages, {_NUM} in the completion\)"
        ),
        1,
        3,
        4,
    ),
    _Form(
        re.compile(
            rf"maximum context length is {_NUM} tokens\. however, your request has {_NUM} input "
            rf"tokens plus {_NUM} 'max_tokens'"
        ),
        1,
        2,
        3,
    ),
    _Form(
        re.compile(
            rf"maximum context length is {_NUM} tokens\. however, your (?:messages resulted in|"
            rf"request has) {_NUM} (?:input )?tokens"
        ),
        1,
        2,
        None,
    ),
    _Form(re.compile(rf"prompt is too long: {_NUM} tokens > {_NUM}"), 2, 1, None),
    _Form(
        re.compile(
            rf"request \({_NUM} tokens\) exceeds the available context size \({_NUM} tokens\)"
        ),
        2,
        1,
        None,
    ),
    _Form(
        re.compile(
            rf"input token count \({_NUM}\) exceeds the maximum number of tokens allowed "
            rf"\({_NUM}\)"
        ),
        2,
        1,
        None,
    ),
    _Form(re.compile(rf"current length is {_NUM} while limit is {_NUM}"), 2, 1, None),
    _Form(re.compile(rf"input too long: {_NUM} input tokens, limit is {_NUM}"), 2, 1, None),
)


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret (of a plausible length) in `text` by `[redacted]`."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def is_context_overflow(message: str, code: str | None = None) -> bool:
    """Whether an error message or code says the input did not fit the context window."""
    lowered = message.lower()
    if _NOT_OVERFLOW in lowered:
        return False
    if code in _OVERFLOW_CODES:
        return True
    return any(s in lowered for s in _OVERFLOW_SUBSTRINGS) or any(
        r.search(lowered) for r in _OVERFLOW_REGEXES
    )


def context_length_error(
    message: str, *, status: int | None, raw: str | None, extra: JSONObject | None = None
) -> ContextLengthError:
    """Build a `ContextLengthError`, parsing the token numbers the message carries."""
    lowered = message.lower()
    limit = reported = output = None
    output_only = False
    for form in _FORMS:
        match = form.pattern.search(lowered)
        if match is None:
            continue
        limit = _num(match.group(form.limit)) if form.limit else None
        reported = _num(match.group(form.reported)) if form.reported else None
        output = _num(match.group(form.output)) if form.output else None
        output_only = form.output_only
        break
    if extra is not None:
        # llama.cpp carries the numbers as fields too.
        n_prompt, n_ctx = extra.get("n_prompt_tokens"), extra.get("n_ctx")
        reported = n_prompt if isinstance(n_prompt, int) and reported is None else reported
        limit = n_ctx if isinstance(n_ctx, int) and limit is None else limit
    fixable = output_only or (
        output is not None and reported is not None and limit is not None and reported < limit
    )
    return ContextLengthError(
        message,
        status=status,
        raw=raw,
        reported_tokens=reported,
        limit_tokens=limit,
        fixable_by_output_reserve=fixable,
        requested_output_tokens=output,
    )


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_fields(obj: JSONValue) -> tuple[str, str | None, str | None, JSONObject]:
    """(message, type, code, error object) from any of the wires' error envelopes."""
    if not isinstance(obj, dict):
        return "", None, None, {}
    inner = obj.get("error")
    err: JSONObject = inner if isinstance(inner, dict) else obj
    message = err.get("message")
    if not isinstance(message, str):
        message = inner if isinstance(inner, str) else obj.get("detail")
    etype, code = err.get("type"), err.get("code")
    if etype == "error":
        etype = None
    return (
        message if isinstance(message, str) else "",
        etype if isinstance(etype, str) else None,
        code if isinstance(code, str) else None,
        err,
    )


def is_validation_error(obj: JSONValue, raw: str) -> bool:
    """Whether an error body says the request failed the server's schema validation.

    FastAPI's 422 carries `detail` as a list of `{loc, msg, type}`; llama-cpp-python wraps the
    same pydantic error in a 500 whose message starts `N validation errors`.
    """
    detail = obj.get("detail") if isinstance(obj, dict) else None
    if (
        isinstance(detail, list)
        and detail
        and all(isinstance(d, dict) and "loc" in d and "msg" in d for d in detail)
    ):
        return True
    return _VALIDATION.search(raw) is not None


def _wrong_endpoint(
    status: int, summary: str, raw: str, url: str, provider: str
) -> InvalidRequestError:
    where = f"providers.{provider}" if provider else "the provider"
    if "model" in summary.lower():
        hint = f"the server does not serve that model: check {where}.model (`comal models`)"
    else:
        hint = (
            f"nothing speaks this wire at that URL: check {where}.wire and {where}.base_url"
            " (OpenAI-compatible servers usually need the /v1 suffix; anthropic-messages adds"
            " /v1/messages to the host itself)"
        )
    text = f"HTTP {status} {_WRONG_ENDPOINT[status]} from {url or 'the server'}: {hint}"
    if summary and summary != f"HTTP {status}":
        text += f" (server said: {summary[:200]})"
    return InvalidRequestError(text, status=status, raw=raw)


def classify_error_object(
    obj: JSONValue, *, status: int | None, raw: str, retry_after: float | None = None
) -> ProviderError:
    """Classify a decoded error body or an error event that arrived inside a stream."""
    message, etype, code, err = _error_fields(obj)
    summary = message or raw[:500] or f"HTTP {status}"
    label = etype or code
    text = f"{label}: {summary}" if label and label not in summary else summary
    if status is not None:
        text = f"HTTP {status} {text}"
    kinds = {etype, code}
    if status not in (401, 403, 429) and (
        is_context_overflow(message or raw, code) or status == 413
    ):
        return context_length_error(text, status=status, raw=raw, extra=err)
    if status in (400, 422, 500) and is_validation_error(obj, raw):
        # The same bytes fail the same way: never retried, whatever the status says.
        return InvalidRequestError(
            f"{text} (the server rejected the request's shape; retrying cannot help)",
            status=status,
            raw=raw,
        )
    if status == 429 or kinds & {"rate_limit_error", "rate_limit_exceeded", "insufficient_quota"}:
        error = RateLimitError(text, status=status, retry_after=retry_after, raw=raw)
        if "insufficient_quota" in kinds:
            # Out of credit: waiting will not help.
            error.retryable = False
        return error
    if status in (401, 403) or kinds & {"authentication_error", "permission_error"}:
        return AuthError(text, status=status, raw=raw)
    if status == 529 or kinds & {"overloaded_error", "api_error", "server_error"}:
        return OverloadedError(text, status=status, retry_after=retry_after, raw=raw)
    if status == 408 or kinds & {"timeout_error"}:
        return NetworkError(text, status=status, raw=raw)
    if status is not None and status >= 500:
        return OverloadedError(text, status=status, retry_after=retry_after, raw=raw)
    return InvalidRequestError(text, status=status, raw=raw)


def classify_http_error(
    status: int,
    body: str,
    headers: Mapping[str, str],
    *,
    secrets: Iterable[str] = (),
    url: str = "",
    provider: str = "",
) -> ProviderError:
    """Classify a non-2xx HTTP answer.

    Args:
        status: the HTTP status.
        body: the response body text.
        headers: the response headers (for retry-after).
        secrets: strings that must not appear in the error (the API key).
        url: the URL that answered (named by wrong-endpoint errors).
        provider: the configured provider's name (named in the suggested fix).
    """
    clean = redact(body, tuple(secrets))
    try:
        obj: JSONValue = json.loads(clean)
    except (ValueError, RecursionError):
        obj = None
    if status in _WRONG_ENDPOINT:
        message = _error_fields(obj)[0] or clean.strip()[:200]
        return _wrong_endpoint(status, message or f"HTTP {status}", clean[:4000], url, provider)
    error = classify_error_object(
        obj, status=status, raw=clean[:4000], retry_after=parse_retry_after(headers)
    )
    lowered = {k.lower(): v for k, v in headers.items()}
    if lowered.get("x-should-retry", "").lower() == "false":
        # The server says retrying is pointless (the convention the official SDKs honour).
        error.retryable = False
    return error
