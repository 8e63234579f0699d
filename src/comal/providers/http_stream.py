"""The thin HTTP part every adapter shares: POST the exact bytes, read SSE lines, map failures.

`WireProvider` holds what all adapters have in common (config, injected `httpx2.AsyncClient`,
key, capabilities) and implements `send()` as: POST the encoded bytes → `adrive(lines, decoder)`;
`stream()` is `encode` then `send`.
Subclasses only provide the URL, the headers, the pure encoder and the pure decoder. Transport
failures become `NetworkError`, non-2xx answers are classified by `error_mapping`, and the API
key is scrubbed from every message. Retries are not done here (see `transport.py`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import replace
from typing import ClassVar

import httpx2

from comal.config import ProviderConfig
from comal.errors import (
    EmptyStreamError,
    InvalidRequestError,
    NetworkError,
    ProviderError,
    RedirectError,
    ResponseDeadlineError,
)
from comal.messages import JSONObject
from comal.providers.base import (
    Capabilities,
    EncodedRequest,
    ModelRequest,
    ProviderEvent,
    Resent,
    WireApi,
    encode_request,
)
from comal.providers.error_mapping import classify_error_object, classify_http_error, redact
from comal.providers.sse import StreamDecoder, WireDecoder, adrive


def merge_extra_body(body: JSONObject, extra: JSONObject) -> JSONObject:
    """`body` with the configured `extra_body` merged in: tables merge key by key, any other
    value (a string, a list, null) replaces the encoded one, so `tool_choice = "required"`
    overrides Comal's `auto`."""
    out = dict(body)
    for key, value in extra.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge_extra_body(current, value)
        else:
            out[key] = value
    return out


def request_extra_body(request: ModelRequest, extra: JSONObject) -> JSONObject:
    """The `extra_body` that applies to `request`.

    A configured `tool_choice` (forcing `required` or one tool) applies only when tools are
    offered, and only until the model has called one for the user's latest words: once the
    request ends with tool results, Comal's own `auto` is sent, so the model can answer instead
    of being forced into another call on every step until `--max-turns` (the reset peers do
    after a forced call, e.g. the OpenAI Agents SDK's `reset_tool_choice`).
    """
    if "tool_choice" not in extra:
        return extra
    answered_call = bool(request.messages) and bool(request.messages[-1].tool_results)
    if request.tools and not answered_call:
        return extra
    return {key: value for key, value in extra.items() if key != "tool_choice"}


def encode_body(body: JSONObject) -> bytes:
    """The request bytes: compact JSON in insertion order, UTF-8 (deterministic for equal input)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def transport_failure(exc: Exception, url: str, secrets: tuple[str, ...]) -> NetworkError:
    """A failure to talk to `url` as the NetworkError reported (secrets redacted)."""
    if isinstance(exc, httpx2.TimeoutException):
        return NetworkError(f"timed out talking to {url}: {type(exc).__name__}")
    message = redact(str(exc), secrets) or type(exc).__name__
    return NetworkError(f"connection to {url} failed: {message}")


def redirect_failure(
    response: httpx2.Response, url: str, secrets: tuple[str, ...]
) -> RedirectError:
    """An HTTP 3xx answer: reported, never followed (the request and its key stay where the
    configuration sends them)."""
    where = redact(response.headers.get("location", ""), secrets) or "no location given"
    return RedirectError(
        f"{url} answered HTTP {response.status_code}, a redirect to {where}; Comal does not"
        " follow redirects: set the provider's base_url to where the server really is"
    )


def http_failure(
    response: httpx2.Response, text: str, url: str, secrets: tuple[str, ...], provider: str
) -> ProviderError:
    """An HTTP error status (300 and up) with its body `text`, classified."""
    if response.status_code < 400:
        return redirect_failure(response, url, secrets)
    return classify_http_error(
        response.status_code,
        text,
        dict(response.headers),
        secrets=secrets,
        url=url,
        provider=provider,
    )


async def post_sse(
    client: httpx2.AsyncClient,
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    secrets: tuple[str, ...],
    timeout_s: float,
    provider: str = "",
    deadline_s: float | None = None,
) -> AsyncGenerator[str, None]:
    """POST `body` and yield the response's lines.

    `timeout_s` bounds each read; `deadline_s` the whole response, however steadily its bytes
    trickle in (each read waits at most what is left of it).

    Raises:
        ProviderError: a classified HTTP error (a redirect included: never followed),
            `ResponseDeadlineError` past the deadline, or `NetworkError` for transport failures.
    """
    timeout = httpx2.Timeout(timeout_s, connect=min(timeout_s, 30.0))
    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    try:
        async with client.stream(
            "POST", url, content=body, headers=headers, timeout=timeout
        ) as response:
            if response.status_code >= 300:
                text = (await response.aread()).decode("utf-8", "replace")
                raise http_failure(response, text, url, secrets, provider)
            ctype = response.headers.get("content-type", "")
            if "event-stream" not in ctype:
                text = redact((await response.aread()).decode("utf-8", "replace"), secrets)
                if not text.strip():
                    raise EmptyStreamError(f"{url} answered HTTP 200 with an empty body")
                try:
                    obj = json.loads(text)
                except ValueError:
                    obj = None
                if isinstance(obj, dict) and "error" in obj:
                    raise classify_error_object(obj, status=response.status_code, raw=text)
                raise InvalidRequestError(
                    f"expected an event stream from {url}, got {ctype or 'no content type'}:"
                    f" {text[:200]!r}"
                )
            lines = response.aiter_lines()
            while True:
                try:
                    if deadline is None:
                        line = await anext(lines)
                    else:
                        # Each read waits at most what is left of the whole response's time.
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise TimeoutError
                        # A timeout scope in this task (never across a yield): a cancel from
                        # outside still ends the call as a cancel.
                        async with asyncio.timeout(left):
                            line = await anext(lines)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    raise ResponseDeadlineError(
                        f"{url} did not finish its response within the deadline of"
                        f" {deadline_s:g} s (response_deadline_s); the stream was cut"
                    ) from None
                yield line
    except (httpx2.TransportError, httpx2.DecodingError, httpx2.StreamError) as exc:
        raise transport_failure(exc, url, secrets) from None


class _AnsweredUnstreamed(EmptyStreamError):
    """An empty 200 stream whose request the server answered when asked without streaming."""


async def _lines_of(text: str) -> AsyncIterator[str]:
    """A whole JSON reply as the lines of one server-sent event, then `[DONE]`."""
    for line in [*(f"data: {row}" for row in text.splitlines()), "", "data: [DONE]", ""]:
        yield line


class WireProvider:
    """Shared state and `stream()` of the HTTP adapters."""

    wire: WireApi = WireApi.OPENAI_CHAT
    decoder_type: ClassVar[type[WireDecoder]]
    """The wire's stream decoder class, built for one model."""
    whole_reply_decodes: bool = False
    """Whether `decoder()` also decodes a whole non-streamed reply given as one event (Chat
    Completions: a choice's `message` in place of `delta`). Such an adapter asks a server that
    answers a request but cannot stream it without streaming (`stream`)."""
    _streams_fail: bool = False
    """Set once the server answered without streaming what it failed to stream: later
    requests are not streamed at all."""

    def __init__(
        self,
        cfg: ProviderConfig,
        *,
        client: httpx2.AsyncClient,
        api_key: str | None,
        capabilities: Capabilities,
    ) -> None:
        self.name = cfg.name
        self.model = cfg.model
        self.capabilities = capabilities
        self._cfg = cfg
        self._client = client
        self._api_key = api_key

    def __repr__(self) -> str:
        # Never show the key.
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r})"

    def url(self) -> str:
        """Where requests are POSTed."""
        raise NotImplementedError

    def auth_headers(self, api_key: str) -> dict[str, str]:
        """The wire's authentication headers: a bearer token unless the wire says otherwise."""
        return {"authorization": f"Bearer {api_key}"}

    def encode_json(self, request: ModelRequest) -> JSONObject:
        """The wire JSON of a request (pure)."""
        raise NotImplementedError

    def decoder(self, request: ModelRequest) -> StreamDecoder:
        """A fresh stream decoder for one response: the wire's, for the request's model."""
        return self.decoder_type(request.model)

    def encode(self, request: ModelRequest) -> bytes:
        """The request body bytes: the wire JSON plus the `extra_body` that applies to it,
        unstreamed once the server has been seen to answer only that way (`send`)."""
        if self._streams_fail:
            return self._unstreamed_body(request)
        return encode_body(self.request_json(request))

    def _unstreamed_body(self, request: ModelRequest) -> bytes:
        body = self.request_json(request)
        body["stream"] = False
        body.pop("stream_options", None)
        return encode_body(body)

    def request_json(self, request: ModelRequest) -> JSONObject:
        """The wire JSON of a request with the `extra_body` that applies to it merged in."""
        extra = request_extra_body(request, self._cfg.extra_body)
        return merge_extra_body(self.encode_json(request), extra)

    def headers(self) -> dict[str, str]:
        """Content negotiation, authentication and configured extra headers."""
        out = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._api_key:
            out.update(self.auth_headers(self._api_key))
        out.update(dict(self._cfg.headers))
        return out

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Encode the request and `send` it."""
        return self.send(encode_request(self, request))

    async def send(self, encoded: EncodedRequest) -> AsyncIterator[ProviderEvent]:
        """POST `encoded.body` as it is and yield the decoded events.

        An empty 200 stream is diagnosed by asking once without streaming. Where that is
        answered and the wire decodes whole replies, the request is sent again without
        streaming and its reply decoded: llama-cpp-python's `chatml-function-calling` format
        fails every streamed request with `tool_choice: "auto"` that way ("Automatic streaming
        tool choice is not supported") yet answers it unstreamed. The server is then no
        longer asked to stream.

        Raises:
            ProviderError: classified failures; for an empty 200 stream, what asking once
                without streaming revealed (`diagnose_empty_stream`).
        """
        request = encoded.request
        if self._streams_fail:
            # `encode` makes this same unstreamed body now, so it is the one the caller
            # recorded; a request encoded before the flip (a child's, running beside the
            # call that flipped it) is sent unstreamed, and says so.
            body = self._unstreamed_body(request)
            if body != encoded.body:
                yield Resent(body, "unstreamed")
            async for event in self._unstreamed(request, body):
                yield event
            return
        secrets = (self._api_key,) if self._api_key else ()
        lines = post_sse(
            self._client,
            self.url(),
            self.headers(),
            encoded.body,
            secrets=secrets,
            timeout_s=self._cfg.timeout_s,
            provider=self.name,
            deadline_s=self._cfg.response_deadline_s,
        )
        try:
            async with aclosing(lines), aclosing(adrive(lines, self.decoder(request))) as events:
                async for event in events:
                    yield event
            return
        except EmptyStreamError:
            probe = self._unstreamed_body(replace(request, max_output_tokens=1))
            yield Resent(probe, "probe")
            failure = await self.diagnose_empty_stream(probe)
        if not (isinstance(failure, _AnsweredUnstreamed) and self.whole_reply_decodes):
            raise failure
        self._streams_fail = True
        body = self._unstreamed_body(request)
        yield Resent(body, "unstreamed")
        async for event in self._unstreamed(request, body):
            yield event

    async def _post_unstreamed(self, content: bytes) -> httpx2.Response:
        """POST an unstreamed body.

        A server that failed a stream may close that connection right after it (llama-cpp-python
        does) while the pool still holds it: a request that finds it closed (before any
        answer) is sent once more, on a new connection.
        """
        headers = {**self.headers(), "accept": "application/json"}
        limit = min(self._cfg.timeout_s, self._cfg.response_deadline_s)
        timeout = httpx2.Timeout(limit, connect=min(limit, 30.0))
        try:
            return await self._client.post(
                self.url(), content=content, headers=headers, timeout=timeout
            )
        except (httpx2.ReadError, httpx2.RemoteProtocolError, httpx2.WriteError):
            return await self._client.post(
                self.url(), content=content, headers=headers, timeout=timeout
            )

    async def _unstreamed(
        self, request: ModelRequest, content: bytes
    ) -> AsyncIterator[ProviderEvent]:
        """POST `content` (`request` unstreamed) and decode the whole reply as one event."""
        secrets = (self._api_key,) if self._api_key else ()
        url = self.url()
        try:
            response = await self._post_unstreamed(content)
        except httpx2.HTTPError as exc:
            raise transport_failure(exc, url, secrets) from None
        text = redact(response.text, secrets)
        if response.status_code >= 300:
            raise http_failure(response, text, url, secrets, self.name)
        async with aclosing(adrive(_lines_of(text), self.decoder(request))) as events:
            async for event in events:
                yield event

    async def diagnose_empty_stream(self, probe: bytes) -> ProviderError:
        """POST `probe` (the request unstreamed, one output token) to learn why a stream was
        empty.

        Some servers (llama-cpp-python over its `n_ctx`) fail a streamed request with HTTP 200
        and no body while the same request without streaming gets a proper error: that error is
        returned, classified (a CONTEXT_LENGTH then takes the normal recovery).
        """
        secrets = (self._api_key,) if self._api_key else ()
        url = self.url()
        try:
            response = await self._post_unstreamed(probe)
        except httpx2.HTTPError as exc:
            found = f"asking again without streaming failed too ({type(exc).__name__})"
        else:
            if 300 <= response.status_code < 400:
                return redirect_failure(response, url, secrets)
            if response.status_code >= 400:
                return classify_http_error(
                    response.status_code,
                    response.text,
                    dict(response.headers),
                    secrets=secrets,
                    url=url,
                    provider=self.name,
                )
            found = f"asked again without streaming it answered HTTP {response.status_code}"
            return _AnsweredUnstreamed(
                f"{url} answered a streamed request with HTTP 200 and an empty stream; {found},"
                " so the server answers this request but fails to stream it (llama-cpp-python's"
                " chatml-function-calling does so whenever tools are offered with tool_choice"
                " auto; a proxy that buffers or drops server-sent events looks the same)."
            )
        return EmptyStreamError(
            f"{url} answered a streamed request with HTTP 200 and an empty stream; {found}."
            " This usually means a proxy in between that buffers or drops server-sent events,"
            " or a server that fails streamed requests silently (llama-cpp-python does so for"
            " a prompt over its n_ctx: lower --context-window or raise the server's n_ctx)."
        )
