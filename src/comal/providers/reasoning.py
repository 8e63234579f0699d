"""Which stored reasoning may be replayed, and how much a request drops.

Reasoning is stored verbatim and replayed only to the wire *and* model that produced it: a
signature or encrypted blob from one model is meaningless (or rejected) elsewhere. A block
also needs what its wire requires to accept it back: Anthropic `thinking` needs its signature
(or `redacted_thinking` its data), a Responses reasoning item needs its encrypted content
(requests are sent with `store: false`, so the server cannot look the item up by id), and Chat
`reasoning_content` needs text. Everything else is dropped when encoding and counted here, so
the caller can record how much reasoning a request left out.
"""

from __future__ import annotations

from comal.messages import ReasoningPart
from comal.providers.base import ModelRequest, WireApi


def is_replayable(part: ReasoningPart, wire: WireApi | str, model: str) -> bool:
    """Whether this reasoning block is sent back in a request to `wire` / `model`."""
    if part.wire != str(wire) or part.model != model:
        return False
    if part.wire == WireApi.ANTHROPIC_MESSAGES:
        return bool(part.signature) or bool(part.redacted_data)
    if part.wire == WireApi.OPENAI_RESPONSES:
        return bool(part.encrypted_content)
    if part.wire == WireApi.OPENAI_CHAT:
        return bool(part.text)
    return False


def count_dropped_reasoning(request: ModelRequest, wire: WireApi | str) -> int:
    """Number of reasoning blocks in `request` that encoding for `wire` leaves out."""
    return sum(
        1
        for message in request.messages
        for part in message.parts
        if isinstance(part, ReasoningPart) and not is_replayable(part, wire, request.model)
    )
