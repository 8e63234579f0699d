"""Replies that stopped before they finished: what `ContextEngine.on_unfinished` records.

A reply cut at the output limit (OUTPUT_LENGTH) or by a full window is never used: it is
recorded as `response.discarded` (the partial message, its usage and the output reserve it was
sent with), none of its tool calls run, and the view leaves it out. The engine decides what
the next request does about it; the reserve recorded here is what `truncated_reserves` reads
back to size the next one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from comal.ledger.records import ResponseDiscardedRecord
from comal.ledger.store import Ledger
from comal.messages import Finish, Message, message_to_json
from comal.usage import Usage

OUTPUT_LENGTH: Final = "OUTPUT_LENGTH"
"""`response.discarded` reason of a reply cut at the output limit (`Finish.LENGTH`)."""
WINDOW_FULL: Final = "CONTEXT_WINDOW_EXCEEDED"
"""`response.discarded` reason of a reply stopped by a full window."""


class ModelReply(Protocol):
    """What the engine reads of a model's answer (the agent's `Reply` is one)."""

    @property
    def finish(self) -> Finish: ...

    @property
    def message(self) -> Message: ...

    @property
    def usage(self) -> Usage: ...


@dataclass(frozen=True, slots=True)
class Discarded:
    """An unfinished reply, recorded, and what the next request is sent with."""

    reason: str
    """`OUTPUT_LENGTH` or `CONTEXT_WINDOW_EXCEEDED`."""
    output_reserve: int
    """The output reserve of the next request."""


def append_discarded(
    ledger: Ledger, session_id: str, reply: ModelReply, reason: str, reserve: int
) -> None:
    """Record `reply`, sent with output reserve `reserve`, as `response.discarded`."""
    record = ResponseDiscardedRecord(
        reason, message_to_json(reply.message), reply.usage.to_json(), reserve
    )
    ledger.append_record(session_id, record)
