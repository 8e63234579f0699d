"""Recording a request: before it is sent, or — for a first request sent on bounds — as soon
as it is on its way.

A session's first request is usually decided by upper bounds of its counts alone
(`ContextEngine.bounded_first_view`), so it is sent before the model's vocabulary is loaded
(o200k takes about 0.6 s of CPU, as long as the rest of start-up). Its `provider.request`
entry then waits for the first event of the reply, or for the failure that ends it: the exact
`prepare()` runs there (it appends nothing, as the bounds decided), its view must be the one
sent (`InvariantError` otherwise), and its estimate is the one recorded. Whatever the reply
records comes after the request entry, and no estimate recorded depends on when the
vocabulary happened to be loaded. A process that dies between the send and that first event
leaves the user's message without a request, as a process that dies just before sending does.
"""

from __future__ import annotations

from comal.agent.events import TurnStarted
from comal.agent.recording import record_request
from comal.agent.session import Session
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
        self._encoded = encoded
        self.view = view
        self._bounded = bounded
        self._entry: str | None = None
        if not bounded:
            self.entry()

    def entry(self) -> str:
        """The entry id, recording it (and announcing the call) the first time.

        Raises:
            InvariantError: the exact view differs from the one sent on bounds.
        """
        if self._entry is not None:
            return self._entry
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
        self._entry = record_request(
            s, self._encoded, view.estimated_tokens, view.checkpoint_number
        )
        s.emit(
            TurnStarted(self._step, view.estimated_tokens, view.measured_base, view.output_reserve)
        )
        return self._entry
