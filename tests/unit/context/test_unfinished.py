"""`ContextEngine.on_unfinished`: the one place a reply that did not finish is recovered from.

Every `Finish` is tried: the two unfinished ones record `response.discarded` and change what the
next request is sent with; every other one records nothing.
"""

from __future__ import annotations

import pytest

from comal.context.engine import ContextEngine, EngineSettings
from comal.context.measure.unfinished import Discarded
from comal.errors import OutputLengthError
from comal.ledger.store import Ledger
from comal.messages import Finish, InvalidArguments, Message, TextPart, ToolCallPart
from comal.providers.reply import Reply
from comal.testing.sessions import SessionBuilder
from comal.usage import Usage
from tests.unit.context.conftest import FIXED, listing

CUT = Message(
    "assistant",
    (TextPart("Writing the file"), ToolCallPart("c1", "Write", {}, InvalidArguments('{"pa', "x"))),
)


def _reply(finish: Finish) -> Reply:
    return Reply(CUT, finish, str(finish), Usage(100, 0, 0, 4_096), {})


def _engine(ledger: Ledger) -> tuple[ContextEngine, SessionBuilder]:
    builder = SessionBuilder(ledger, window=65_536)
    builder.user("Write the report.")
    settings = EngineSettings(65_536, max_output_tokens=16_000)
    return ContextEngine(ledger, builder.session_id, settings, FIXED, model="gpt-4o"), builder


def test_output_length_is_discarded_and_the_reserve_grows(ledger: Ledger) -> None:
    # A request asks for all the output the window leaves beside it: the reply can only have
    # been cut below the model's maximum when the context took more than half the window. The
    # larger reserve then lowers the threshold, so the next request is relieved and asks more.
    builder = SessionBuilder(ledger, window=65_536)
    builder.user("Write the report.")
    for k in range(10):
        builder.turn(f"Reading {k}.", [("Bash", {"command": f"cat {k}"}, listing(str(k), 180), 0)])
    settings = EngineSettings(65_536, max_output_tokens=32_000)
    engine = ContextEngine(ledger, builder.session_id, settings, FIXED, model="gpt-4o")
    reserve = engine.prepare().output_reserve
    assert reserve < 32_000
    discarded = engine.on_unfinished(_reply(Finish.LENGTH), reserve)
    assert discarded == Discarded("OUTPUT_LENGTH", engine.output_reserve())
    assert discarded.output_reserve > reserve
    (entry,) = ledger.entries(builder.session_id, kinds=("response.discarded",))
    assert entry.payload == {
        "reason": "OUTPUT_LENGTH",
        "message": {
            "role": "assistant",
            "parts": [
                {"type": "text", "text": "Writing the file"},
                {
                    "type": "tool_call",
                    "call_id": "c1",
                    "name": "Write",
                    "arguments": {},
                    "invalid": {"raw_arguments": '{"pa', "error": "x"},
                },
            ],
        },
        "usage": Usage(100, 0, 0, 4_096).to_json(),
        "output_reserve": reserve,
    }
    assert ledger.entries(builder.session_id, kinds=("checkpoint",)) == []
    retry = engine.prepare()
    assert retry.actions
    assert retry.output_reserve >= discarded.output_reserve > reserve


def test_a_cut_at_the_model_maximum_cannot_be_asked_again_larger(ledger: Ledger) -> None:
    engine, _ = _engine(ledger)
    reserve = engine.prepare().output_reserve
    # The short context left the whole maximum output to the reply: nothing larger exists.
    assert reserve == 16_000
    with pytest.raises(OutputLengthError):
        engine.on_unfinished(_reply(Finish.LENGTH), reserve)


def test_a_full_window_is_discarded_and_derives_a_checkpoint(ledger: Ledger) -> None:
    engine, builder = _engine(ledger)
    reserve = engine.prepare().output_reserve
    discarded = engine.on_unfinished(_reply(Finish.CONTEXT_WINDOW_EXCEEDED), reserve)
    assert discarded == Discarded("CONTEXT_WINDOW_EXCEEDED", reserve)
    (entry,) = ledger.entries(builder.session_id, kinds=("response.discarded",))
    assert (entry.payload["reason"], entry.payload["output_reserve"]) == (
        "CONTEXT_WINDOW_EXCEEDED",
        reserve,
    )
    (checkpoint,) = ledger.entries(builder.session_id, kinds=("checkpoint",))
    assert checkpoint.payload["by"] == "context_window_exceeded"


@pytest.mark.parametrize(
    "finish", [f for f in Finish if f not in (Finish.LENGTH, Finish.CONTEXT_WINDOW_EXCEEDED)]
)
def test_a_finished_reply_records_nothing(ledger: Ledger, finish: Finish) -> None:
    engine, builder = _engine(ledger)
    before = len(ledger.entries(builder.session_id))
    assert engine.on_unfinished(_reply(finish), 4_096) is None
    assert len(ledger.entries(builder.session_id)) == before
