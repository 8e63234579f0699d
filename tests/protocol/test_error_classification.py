"""Every error form of research tech.md §3.1–§3.5 is classified, with its numbers parsed."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import httpx2
import pytest

from comal.config import ProviderConfig
from comal.errors import (
    AuthError,
    ContextLengthError,
    InvalidRequestError,
    NetworkError,
    OverloadedError,
    ProviderError,
    RateLimitError,
)
from comal.messages import user_text
from comal.providers.base import ModelRequest
from comal.providers.error_mapping import (
    classify_error_object,
    classify_http_error,
    is_context_overflow,
    parse_retry_after,
)
from comal.providers.factory import make_provider
from comal.providers.reply import collect

OVERFLOWS = [
    (c["body"], c["reported"], c["limit"], c["output"], c["fixable"])
    for c in json.loads((Path(__file__).parent / "overflow_bodies.json").read_text("utf-8"))
]
"""Recorded overflow bodies (tech.md §3): OpenAI, Responses, Anthropic (both forms), Gemini,
vLLM (three wordings), llama.cpp, DeepSeek, Cerebras; with the numbers each must yield."""


@pytest.mark.parametrize(("body", "reported", "limit", "output", "fixable"), OVERFLOWS)
def test_every_overflow_form_is_context_length(body, reported, limit, output, fixable) -> None:
    error = classify_http_error(400, json.dumps(body), {})
    assert isinstance(error, ContextLengthError)
    assert (error.reported_tokens, error.limit_tokens) == (reported, limit)
    assert error.requested_output_tokens == output
    assert error.fixable_by_output_reserve is fixable
    assert error.code == "CONTEXT_LENGTH"
    assert not error.retryable


def test_litellm_substrings_all_match() -> None:
    for text in (
        "exceed context limit",
        "requested token count exceeds the model's maximum context length",
        "is longer than the model's context length",
        "input tokens exceed the configured limit",
        "`inputs` tokens + `max_new_tokens` must be <= 4096",
        "maximum input length is 8192 tokens",
        "input too long: 9000 input tokens, limit is 8192",
    ):
        assert is_context_overflow(text), text
    assert not is_context_overflow(
        "string_above_max_length: 'user' is too long (maximum context length)"
    )


def test_413_is_context_length() -> None:
    body = {
        "type": "error",
        "error": {
            "type": "request_too_large",
            "message": "Request exceeds the maximum allowed number of bytes.",
        },
    }
    assert isinstance(classify_http_error(413, json.dumps(body), {}), ContextLengthError)


@pytest.mark.parametrize(
    ("status", "body", "headers", "kind", "retryable", "retry_after"),
    [
        (
            429,
            {
                "error": {
                    "message": "Rate limit reached",
                    "type": "requests",
                    "code": "rate_limit_exceeded",
                }
            },
            {"Retry-After": "7"},
            RateLimitError,
            True,
            7.0,
        ),
        (
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
            {"retry-after-ms": "1500"},
            RateLimitError,
            True,
            1.5,
        ),
        (
            429,
            {
                "error": {
                    "message": "You exceeded your current quota.",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
            {},
            RateLimitError,
            False,
            None,
        ),
        (
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            {},
            OverloadedError,
            True,
            None,
        ),
        (
            503,
            {"error": {"message": "The server is overloaded", "type": "server_error"}},
            {"retry-after": "2"},
            OverloadedError,
            True,
            2.0,
        ),
        (
            500,
            {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
            {},
            OverloadedError,
            True,
            None,
        ),
        (502, "<html>Bad gateway</html>", {}, OverloadedError, True, None),
        (
            401,
            {
                "error": {
                    "message": "Incorrect API key provided",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            {},
            AuthError,
            False,
            None,
        ),
        (
            403,
            {"type": "error", "error": {"type": "permission_error", "message": "no access"}},
            {},
            AuthError,
            False,
            None,
        ),
        (408, "timeout", {}, NetworkError, True, None),
        (
            400,
            {"error": {"message": "Invalid value for 'tools'", "type": "invalid_request_error"}},
            {},
            InvalidRequestError,
            False,
            None,
        ),
        (
            404,
            {"error": {"message": "model not found", "type": "not_found_error"}},
            {},
            InvalidRequestError,
            False,
            None,
        ),
        (422, {"detail": "Unprocessable"}, {}, InvalidRequestError, False, None),
    ],
)
def test_status_and_type_classification(
    status, body, headers, kind, retryable, retry_after
) -> None:
    text = body if isinstance(body, str) else json.dumps(body)
    error = classify_http_error(status, text, headers)
    assert type(error) is kind
    assert error.retryable is retryable
    assert error.retry_after == retry_after
    assert error.status == status
    assert str(status) in error.message


def test_retry_after_http_date() -> None:
    assert (
        parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=1445412500.0)
        == 10.0
    )
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_stream_error_objects_classified_without_status() -> None:
    overloaded = classify_error_object(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        status=None,
        raw="",
    )
    assert isinstance(overloaded, OverloadedError)
    responses = classify_error_object(
        {
            "type": "error",
            "code": "context_length_exceeded",
            "message": "too long",
            "param": "input",
        },
        status=None,
        raw="",
    )
    assert isinstance(responses, ContextLengthError)


def test_secrets_are_scrubbed_from_messages_and_raw() -> None:
    key = "sk-live-abcdef0123456789"
    body = json.dumps(
        {"error": {"message": f"Incorrect API key provided: {key}.", "code": "invalid_api_key"}}
    )
    error = classify_http_error(401, body, {}, secrets=[key])
    assert isinstance(error, ProviderError)
    assert key not in str(error)
    assert key not in (error.raw or "")
    assert "[redacted]" in error.message


LLAMA_CPP_PYTHON_NULL_CONTENT = {
    # llama-cpp-python's error handler wraps pydantic's validation error in a 500 (the form a
    # `"content": null` assistant turn met); abridged to two of its seven errors.
    "error": {
        "message": (
            "7 validation errors:\n  {'type': 'string_type', 'loc': ('body', 'messages', 2,"
            " 'typed-dict', 'content'), 'msg': 'Input should be a valid string', 'input': None}"
            "\n  {'type': 'literal_error', 'loc': ('body', 'messages', 2, 'typed-dict', 'role'),"
            " 'msg': \"Input should be 'system'\", 'input': 'assistant'}"
        ),
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}
FASTAPI_422 = {
    "detail": [
        {
            "type": "missing",
            "loc": ["body", "messages"],
            "msg": "Field required",
            "input": {"model": "m"},
        }
    ]
}


@pytest.mark.parametrize(
    ("status", "body"), [(500, LLAMA_CPP_PYTHON_NULL_CONTENT), (422, FASTAPI_422)]
)
def test_validation_bodies_are_invalid_request_and_not_retried(status, body) -> None:
    error = classify_http_error(status, json.dumps(body), {})
    assert type(error) is InvalidRequestError
    assert error.retryable is False
    assert "retrying cannot help" in error.message


def test_a_plain_500_is_still_overloaded() -> None:
    error = classify_http_error(500, "Internal Server Error", {})
    assert type(error) is OverloadedError
    assert error.retryable is True


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (501, "<html><head><title>Error response</title></head><body>Unsupported method"),
        (404, '{"detail":"Not Found"}'),
        (405, ""),
    ],
)
def test_wrong_endpoint_names_the_url_and_the_fix(status, body) -> None:
    url = "http://127.0.0.1:8000/chat/completions"
    error = classify_http_error(status, body, {}, url=url, provider="local")
    assert type(error) is InvalidRequestError
    assert error.retryable is False
    assert url in error.message
    assert "providers.local.wire" in error.message
    assert "providers.local.base_url" in error.message
    assert "/v1" in error.message


def test_a_404_about_the_model_suggests_the_model() -> None:
    # Ollama's answer for a model it has not pulled, with `api_error` as its type.
    body = {
        "error": {"message": 'model "qwen9" not found, try pulling it first', "type": "api_error"}
    }
    error = classify_http_error(404, json.dumps(body), {}, url="http://h/v1/chat/completions")
    assert type(error) is InvalidRequestError
    assert "providers.x.model" not in error.message
    assert "the provider.model" in error.message
    assert "qwen9" in error.message


async def test_a_plain_http_server_is_reported_as_the_wrong_endpoint() -> None:
    """`python -m http.server` answers POST with 501: named, not retried as OVERLOADED."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        cfg = ProviderConfig(name="local", wire="openai-chat", base_url=base, model="m")
        async with httpx2.AsyncClient() as client:
            provider = make_provider(cfg, client=client, api_key=None, context_window_override=None)
            with pytest.raises(InvalidRequestError) as caught:
                await collect(provider.stream(ModelRequest("m", "", (user_text("hi"),))))
    finally:
        server.shutdown()
        server.server_close()
    assert caught.value.status == 501
    assert f"{base}/chat/completions" in caught.value.message
    assert "providers.local.base_url" in caught.value.message


async def test_a_validation_500_is_sent_once_not_retried() -> None:
    """llama-cpp-python's answer to a history it cannot validate: one request, a clear error."""
    calls: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(request)
        return httpx2.Response(500, json=LLAMA_CPP_PYTHON_NULL_CONTENT)

    cfg = ProviderConfig(name="lcp", wire="openai-chat", base_url="http://h/v1", model="m")
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        provider = make_provider(cfg, client=client, api_key=None, context_window_override=None)
        with pytest.raises(InvalidRequestError, match="7 validation errors"):
            await collect(provider.stream(ModelRequest("m", "", (user_text("hi"),))))
    assert len(calls) == 1
