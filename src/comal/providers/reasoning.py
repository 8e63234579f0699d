"""Which stored reasoning may be replayed, and how much a request drops.

Reasoning is stored verbatim and replayed only to the wire *and* model that produced it: a
signature or encrypted blob from one model is meaningless (or rejected) elsewhere. A block
also needs what its wire requires to accept it back: Anthropic `thinking` needs its signature
(or `redacted_thinking` its data), a Responses reasoning item needs its encrypted content
(requests are sent with `store: false`, so the server cannot look the item up by id), and Chat
`reasoning_content` needs text. Everything else is dropped when encoding and counted here, so
the caller can record how much reasoning a request left out. What each wire needs is its
`Wire.replayable` (the adapters ask their own `Wire` through `base.replays`).
"""

from __future__ import annotations

from comal.config import WireApi
from comal.messages import ReasoningPart
from comal.providers.base import ModelRequest, replays
from comal.providers.wires import WIRES


def is_replayable(part: ReasoningPart, wire: WireApi | str, model: str) -> bool:
    """Whether this reasoning block is sent back in a request to `wire` / `model`."""
    known = WIRES.get(WireApi(wire)) if wire in tuple(WireApi) else None
    return known is not None and replays(known, part, model)


def count_dropped_reasoning(request: ModelRequest, wire: WireApi | str) -> int:
    """Number of reasoning blocks in `request` that encoding for `wire` leaves out."""
    return sum(
        1
        for message in request.messages
        for part in message.parts
        if isinstance(part, ReasoningPart) and not is_replayable(part, wire, request.model)
    )
