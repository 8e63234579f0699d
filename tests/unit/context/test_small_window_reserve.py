"""The output reserve fits small windows; measured counts move calibration both ways."""

from __future__ import annotations

import re

import pytest

from comal.context.engine import ContextEngine, EngineSettings, FixedParts
from comal.context.measure.budget import (
    RESERVE_FLOOR,
    RESERVE_START,
    reserve_room,
    size_output_reserve,
)
from comal.errors import ContextLengthError, ContextOverheadError, OutputLengthError
from comal.ledger.store import Ledger
from comal.messages import ToolSpec, message_to_json, user_text
from comal.testing.sessions import SessionBuilder
from comal.usage import Usage

TOOLS = tuple(
    ToolSpec(f"Tool{i}", "Does one thing. " * 40, {"type": "object", "properties": {}})
    for i in range(8)
)
LOCAL = "SmolLM2-135M-Instruct"


def local_engine(ledger: Ledger, session_id: str, **settings: object) -> ContextEngine:
    fixed = FixedParts("You are a coding agent. " * 40, "", TOOLS)
    return ContextEngine(
        ledger,
        session_id,
        EngineSettings(window_tokens=4_096, max_output_tokens=4_096, **settings),  # type: ignore[arg-type]
        fixed,
        model=LOCAL,
    )


def discard(builder: SessionBuilder, reserve: int) -> None:
    builder.append(
        "response.discarded",
        {
            "reason": "OUTPUT_LENGTH",
            "message": message_to_json(user_text("partial")),
            "usage": Usage().to_json(),
            "output_reserve": reserve,
        },
    )


def test_sizing_rules() -> None:
    assert size_output_reserve([], [], max_output=32_000) == RESERVE_START
    assert size_output_reserve([10, 20, 30], [], max_output=32_000) == RESERVE_FLOOR
    assert size_output_reserve([900] * 10, [], max_output=32_000) == 1_800
    assert size_output_reserve([900] * 10, [], max_output=32_000, configured=1_000) == 1_000
    assert size_output_reserve([], [], max_output=32_000, room=700) == 700
    assert size_output_reserve([], [3_000], max_output=32_000) == 6_000
    assert size_output_reserve([], [3_000], max_output=32_000, room=5_000) == 5_000
    assert reserve_room(4_096, 2_600, 256) == 620
    assert reserve_room(4_096, 5_000, 256) == 0


def test_a_4k_window_with_heavy_tools_still_prepares(ledger: Ledger) -> None:
    builder = SessionBuilder(ledger, model=LOCAL, window=4_096)
    builder.user("say hi")
    engine = local_engine(ledger, builder.session_id)
    view = engine.prepare()
    budget = engine.budget()
    fixed = engine.fixed_tokens()
    assert fixed > 1_500
    assert budget.output_reserve == reserve_room(4_096, fixed, budget.margin)
    assert view.estimated_tokens + view.output_reserve + budget.margin <= 4_096


def test_the_configured_reserve_is_a_maximum_and_growth_stops_at_the_window(
    ledger: Ledger,
) -> None:
    builder = SessionBuilder(ledger, model=LOCAL, window=4_096)
    builder.user("say hi")
    engine = local_engine(ledger, builder.session_id, output_reserve_tokens=300)
    assert engine.output_reserve() == 300
    discard(builder, 300)
    with pytest.raises(OutputLengthError, match="4,096-token window") as caught:
        engine.grow_output_reserve()
    assert "configured output_reserve_tokens 300" in caught.value.message
    assert "kept in the ledger as discarded: 'partial'" in caught.value.message

    other = SessionBuilder(ledger, model=LOCAL, window=4_096)
    other.user("say hi")
    free = local_engine(ledger, other.session_id)
    room = free.output_reserve()
    discard(other, room // 2)
    assert free.grow_output_reserve() == room  # grown, but never past what the window leaves
    discard(other, room)
    with pytest.raises(OutputLengthError):
        free.grow_output_reserve()


def test_fixed_parts_that_leave_no_useful_reply_are_overhead(ledger: Ledger) -> None:
    builder = SessionBuilder(ledger, model=LOCAL, window=2_048)
    builder.user("say hi")
    fixed = FixedParts("You are a coding agent. " * 40, "", TOOLS)
    engine = ContextEngine(ledger, builder.session_id, EngineSettings(2_048), fixed, model=LOCAL)
    with pytest.raises(ContextOverheadError, match="2,048-token window"):
        engine.prepare()


def test_a_reported_count_moves_the_ratio_down_and_a_bare_refusal_only_up(
    ledger: Ledger,
) -> None:
    builder = SessionBuilder(ledger, model=LOCAL, window=4_096)
    builder.user("say hi")
    engine = local_engine(ledger, builder.session_id)
    view = engine.prepare()
    counted = view.counted_tokens
    assert engine.on_server_count(int(counted * 0.8), counted)
    assert engine.ratio() == pytest.approx(0.8, abs=0.01)
    assert not engine.on_server_count(int(counted * 0.81), counted)  # within 5 %: nothing
    engine.prepare()
    engine.on_context_length(
        ContextLengthError("too long", reported_tokens=int(counted * 0.7), limit_tokens=4_096)
    )
    assert engine.ratio() == pytest.approx(0.7, abs=0.01)
    engine.prepare()
    engine.on_context_length(ContextLengthError("too long"))  # no numbers: a lower bound
    assert engine.ratio() > 1.0  # the refused size (window + 1) over the count


def test_the_overhead_message_adds_up_to_more_than_the_window(ledger: Ledger) -> None:
    builder = SessionBuilder(ledger, model=LOCAL, window=2_048)
    builder.user("say hi")
    fixed = FixedParts("You are a coding agent. " * 40, "", TOOLS)
    engine = ContextEngine(ledger, builder.session_id, EngineSettings(2_048), fixed, model=LOCAL)
    with pytest.raises(ContextOverheadError) as refused:
        engine.prepare()
    message = refused.value.message
    numbers = re.search(
        r"~([\d,]+) in all\), room for a reply ([\d,]+) and as much again for the conversation,"
        r" margin ([\d,]+): ~([\d,]+) needed, more than the 2,048 there are",
        message,
    )
    assert numbers is not None, message
    in_all, reply, margin, needed = (int(g.replace(",", "")) for g in numbers.groups())
    assert needed == in_all + 2 * reply + margin
    assert needed > 2_048
