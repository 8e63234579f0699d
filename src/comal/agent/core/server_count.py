"""Preparing the first request of a run with the server's exact count, where it offers one.

Local models have no offline tokenizer, so the engine estimates (conservatively, often 10–20 %
high) until the first answer reports measured usage. A server that counts exactly (llama.cpp:
`CountsTokens`) is asked once per run before the first request: the count calibrates the
engine up or down, and the view is prepared again with it. An estimate that alone exceeds a
small window (CONTEXT_OVERHEAD) is checked the same way before it stops the run: a 4,096-token
window that really holds the fixed parts is then used.
"""

from __future__ import annotations

from comal.agent.core.session import Session
from comal.context.view.build import PreparedView
from comal.errors import ContextOverheadError
from comal.messages import Message, ToolSpec
from comal.providers.base import CountsTokens, ModelRequest


async def _count(
    s: Session, system: str, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]
) -> int | None:
    if not isinstance(s.provider, CountsTokens) or s.engine.counter.exact:
        return None
    request = ModelRequest(s.provider.model, system, messages, tools, max_output_tokens=1)
    return await s.provider.count_input_tokens(request)


async def prepare_first(s: Session) -> PreparedView:
    """`engine.prepare()` for a run's first request, calibrated by the server's count.

    Raises:
        ContextOverheadError: the fixed parts do not fit even as the server counts them.
    """
    try:
        view = s.engine.prepare()
    except ContextOverheadError:
        asm = s.engine.assemble()
        measured = await _count(s, asm.system, asm.messages, asm.tools)
        if measured is None or not s.engine.on_server_count(measured, asm.total_tokens):
            raise
        return s.engine.prepare()
    if view.measured_base:
        return view
    measured = await _count(s, view.system, view.messages, view.tools)
    if measured is not None and s.engine.on_server_count(measured, view.counted_tokens):
        return s.engine.prepare()
    return view
