"""Recording a request: before it is sent, or — for a first request sent on bounds — as soon
as it is on its way.

A session's first request is usually decided by upper bounds of its counts alone
(`ContextEngine.bounded_first_view`), so it is sent before the model's vocabulary is loaded
(o200k takes about 0.6 s of CPU, as long as the rest of start-up). Its `provider.request`
entry then waits for the first event of the reply, or the failure that ends it: the exact
`prepare()` runs there (it appends nothing, as the bounds decided), its view must be the one
sent (`InvariantError` otherwise), and its estimate is the one recorded; a reply slow to start
holds it back no longer than `RECORD_AFTER_S`. Whatever the reply records comes after the
request entry, and no estimate recorded depends on when the vocabulary happened to be loaded.
A process that dies in between leaves the user's message without a request, as a process
that dies just before sending does.
"""

from __future__ import annotations

import asyncio

from comal.agent.core.events import TurnStarted
from comal.agent.core.recording import record_request
from comal.agent.core.session import Session
from comal.context.view.build import PreparedView
from comal.errors import InvariantError
from comal.providers.base import CountsTokens, EncodedRequest, ModelRequest


async def bounded_first(s: Session) -> PreparedView | None:
    """The first request's view on bounds, or None (prepare it exactly).

    Where the engine only estimates and the server counts exactly (llama.cpp), its count
    calibrates the first request (`server_count.prepare_first`): the bounds, which know
    nothing of that calibration, then leave the decision to it. A server that does not count
    is not asked (`count_input_tokens` answers None without a request).
    """
    view = s.engine.bounded_first_view()
    if view is None or s.engine.counter.exact or not isinstance(s.provider, CountsTokens):
        return view
    request = ModelRequest(s.provider.model, view.system, view.messages, view.tools, 1)
    return view if await s.provider.count_input_tokens(request) is None else None


RECORD_AFTER_S = 0.05
"""How long after a first request on bounds starts on its way its entry is recorded at the
latest, when no event of the reply came first (a loopback POST is written well within it)."""


class RequestRecord:
    """The `provider.request` entry of one model call, recorded once (`entry()`).

    Args:
        s: the session.
        step: the model call's number in the turn (for `TurnStarted`).
        encoded: the body sent.
        view: the view it was encoded from.
        bounded: True when `view` was decided on bounds (recorded late, see the module).
    """

    def __init__(
        self, s: Session, step: int, encoded: EncodedRequest, view: PreparedView, *, bounded: bool
    ) -> None:
        self._s = s
        self._step = step
        self.encoded = encoded
        self.view = view
        self._bounded = bounded
        self._entry: str | None = None
        self._failed: Exception | None = None
        self._timer: asyncio.TimerHandle | None = None
        if not bounded:
            self.entry()
        else:
            self._timer = asyncio.get_running_loop().call_later(RECORD_AFTER_S, self._soon)

    def _soon(self) -> None:
        """The request is on its way: record it now rather than when a slow reply starts."""
        self._timer = None
        try:
            self.entry()
        except Exception as exc:  # noqa: BLE001 - raised again by the loop's next `entry()`
            self._failed = exc

    def close(self) -> None:
        """Stop the timer (the call is over, or the request was recorded)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def entry(self) -> str:
        """The entry id, recording it (and announcing the call) the first time.

        Raises:
            InvariantError: the exact view differs from the one sent on bounds.
        """
        if self._failed is not None:
            raise self._failed
        if self._entry is not None:
            return self._entry
        self.close()
        s, view = self._s, self.view
        if self._bounded:
            exact = s.engine.prepare()
            sent = (view.system, view.messages, view.tools, view.output_reserve)
            if (exact.system, exact.messages, exact.tools, exact.output_reserve) != sent or (
                exact.actions
            ):
                raise InvariantError(
                    "the first request was sent on token bounds but the exact counts prepare"
                    " another one; nothing of its reply is recorded"
                )
            self.view = view = exact
        self._entry = record_request(s, self.encoded, view.estimated_tokens, view.checkpoint_number)
        s.emit(
            TurnStarted(self._step, view.estimated_tokens, view.measured_base, view.output_reserve)
        )
        return self._entry
