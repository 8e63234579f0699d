"""The one retry wrapper: backoff with jitter, retry-after honoured, only retryable kinds.

Rules:
- Only errors whose `retryable` is true are retried (RATE_LIMIT, OVERLOADED, NETWORK).
  CONTEXT_LENGTH is never retried here: the same bytes would fail the same way; the context
  engine must shrink the request first.
- A retry happens only if the failed attempt yielded nothing: once an event reached the
  caller, a retry would duplicate output, so the error propagates.
- A server's retry-after is honoured (never waited less); a retry-after longer than
  `max_retry_after_s` is not waited at all, the error propagates at once.
- Otherwise the delay is exponential (`base_delay_s · 2^attempt`, capped) with equal jitter.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable

from comal.errors import ContextLengthError, ProviderError
from comal.providers.base import (
    CountsTokens,
    EncodedRequest,
    ModelRequest,
    Provider,
    ProviderEvent,
    encode_request,
)


def is_retryable(error: ProviderError) -> bool:
    """Whether the wrapper may retry after this error."""
    return bool(error.retryable) and not isinstance(error, ContextLengthError)


class RetryingProvider:
    """Wraps any `Provider`, retrying failed calls that produced no events yet."""

    def __init__(
        self,
        inner: Provider,
        max_retries: int = 4,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
        base_delay_s: float = 1.0,
        max_delay_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        on_retry: Callable[[ProviderError, int, float], None] | None = None,
    ) -> None:
        """Args:
        inner: the provider to call.
        max_retries: retries after the first attempt.
        sleep: awaited between attempts (tests pass a recorder).
        jitter: returns a float in [0, 1).
        base_delay_s: first backoff step.
        max_delay_s: backoff cap.
        max_retry_after_s: longest server-requested wait that is honoured.
        on_retry: told (error, attempt number, delay) before each wait.
        """
        self.inner = inner
        self.name = inner.name
        self.wire = inner.wire
        self.model = inner.model
        self.capabilities = inner.capabilities
        self.max_retries = max_retries
        self._sleep = sleep
        self._jitter = jitter
        self._base = base_delay_s
        self._cap = max_delay_s
        self._max_retry_after = max_retry_after_s
        self._on_retry = on_retry

    def __repr__(self) -> str:
        return f"RetryingProvider({self.inner!r}, max_retries={self.max_retries})"

    def encode(self, request: ModelRequest) -> bytes:
        """The inner provider's request bytes."""
        return self.inner.encode(request)

    def delay_for(self, error: ProviderError, attempt: int) -> float | None:
        """Seconds to wait before retry number `attempt + 1`, or None to give up."""
        retry_after: float | None = error.retry_after
        if retry_after is not None:
            if retry_after > self._max_retry_after:
                return None
            return retry_after * (1.0 + 0.1 * self._jitter())
        step = min(self._cap, self._base * (2.0**attempt))
        return step * (0.5 + 0.5 * self._jitter())

    async def count_input_tokens(self, request: ModelRequest) -> int | None:
        """The inner provider's exact count, when its server offers one (`CountsTokens`)."""
        if isinstance(self.inner, CountsTokens):
            return await self.inner.count_input_tokens(request)
        return None

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Encode the request and `send` it."""
        return self.send(encode_request(self, request))

    async def send(self, encoded: EncodedRequest) -> AsyncIterator[ProviderEvent]:
        """The inner provider's answer to the same bytes, retried while nothing was yielded."""
        attempt = 0
        while True:
            yielded = False
            try:
                async for event in self.inner.send(encoded):
                    yielded = True
                    yield event
                return
            except ProviderError as error:
                if yielded or attempt >= self.max_retries or not is_retryable(error):
                    raise
                delay = self.delay_for(error, attempt)
                if delay is None:
                    raise
                attempt += 1
                if self._on_retry is not None:
                    self._on_retry(error, attempt, delay)
                await self._sleep(delay)
