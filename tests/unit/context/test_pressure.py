"""Pressure: projection when it pays, derivation otherwise, guards, recalibration, reserves."""

from __future__ import annotations

import pytest

from comal.context.engine import ContextEngine, EngineSettings, FixedParts
from comal.context.view.invariants import check_pairs
from comal.errors import (
    ContextLengthError,
    ContextOverheadError,
    ContextPressureLoopError,
    OutputLengthError,
)
from comal.ledger.store import Ledger
from comal.messages import message_to_json, user_text
from comal.testing.sessions import SessionBuilder
from comal.usage import Usage
from tests.unit.context.conftest import BASH, FIXED, listing, make_engine

TASK = "Refactor the handlers in src/ and keep the tests green.\n" + "\n".join(
    f"- handler_{i}: keep its signature, move its parsing into src/parse/p{i}.py and add a test"
    f" for the empty input, the unicode input and the {i}-item input."
    for i in range(12)
)


def flat(view_messages: tuple) -> list:  # type: ignore[type-arg]
    return [(m.role, p) for m in view_messages for p in m.parts]


def small_turn(builder: SessionBuilder, i: int) -> None:
    builder.turn(
        f"Checking item {i}.",
        [("Bash", {"command": f"grep -n item{i} src"}, f"src/a.py:{i}: item{i}\n", 0)],
    )


def test_projection_then_derivation_then_fits(ledger: Ledger, builder: SessionBuilder) -> None:
    # While the conversation is mostly old large reads, projecting them lands about where the
    # deepest checkpoint would, keeping every message verbatim: stage 1 is enough. Once many
    # small turns have piled up, only a checkpoint gets the view back down.
    builder.user(TASK)
    engine = make_engine(ledger, builder.session_id)
    previous = engine.prepare()
    actions: list[tuple[str, ...]] = []
    big = []
    for k in range(6):
        table = "".join(f"{k},{i},{i * i}\n" for i in range(500))  # ~3.5k tokens, no salience
        big += builder.turn(
            f"Reading part {k}.", [("Read", {"path": f"data/p{k}.csv"}, table, None)]
        )
        view = engine.prepare()
        actions.append(view.actions)
        previous = view
        if view.actions:
            break
    for i in range(400):
        if ("checkpoint",) in actions:
            break
        builder.turn(
            f"Checking part {i}.",
            [("Bash", {"command": f"grep -n part{i} src"}, listing(f"m{i}", 12), 0)],
        )
        view = engine.prepare()
        check_pairs(view.messages)
        assert view.estimated_tokens <= view.usable_tokens
        if not view.actions:
            # Between pressure events the request only grows by appending.
            before = flat(previous.messages)
            assert flat(view.messages)[: len(before)] == before
        actions.append(view.actions)
        previous = view
    assert ("projection",) in actions
    assert actions.index(("projection",)) < actions.index(("checkpoint",))
    projections = ledger.entries(builder.session_id, kinds=("projection",))
    projected = set(projections[0].payload["result_ids"])  # type: ignore[arg-type]
    assert projected <= {r.id for r in big}
    # The event records why and what it weighed.
    assert projections[0].payload["trigger"] == "threshold"
    options = projections[0].payload["options"]
    assert isinstance(options, list)
    assert [o["action"] for o in options if isinstance(o, dict)] == ["projection", "checkpoint"]
    checkpoint = ledger.entries(builder.session_id, kinds=("checkpoint",))[0]
    assert checkpoint.payload["number"] == 1
    text = previous.messages[0].parts[0].text  # type: ignore[union-attr]
    assert text.startswith("[checkpoint 1 · Refactor the handlers")
    assert TASK in text
    assert previous.checkpoint_number == 1
    # The run goes on after the checkpoint and keeps fitting.
    for i in range(400, 440):
        small_turn(builder, i)
        view = engine.prepare()
        assert view.estimated_tokens <= view.usable_tokens
    builder.answer("Done.")
    assert engine.prepare().messages[-1].role == "assistant"


def test_projection_that_does_not_pay_goes_straight_to_derivation(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Audit the module.")
    builder.turn("Reading.", [("Read", {"path": "src/big.py"}, listing("big", 130), None)])
    engine = make_engine(ledger, builder.session_id)
    for i in range(400):
        small_turn(builder, i)
        view = engine.prepare()
        if view.actions:
            break
    assert view.actions == ("checkpoint",)
    assert ledger.entries(builder.session_id, kinds=("projection",)) == []


def test_errors_and_recent_outputs_are_never_projected(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Fix it.")
    failing = builder.turn(
        "Testing.",
        [
            (
                "Bash",
                {"command": "pytest"},
                listing("fail", 200) + "\nFAILED tests/test_a.py::test_x",
                1,
            )
        ],
    )
    for k in range(3):
        builder.turn("Reading.", [("Read", {"path": f"src/p{k}.py"}, listing(f"p{k}", 150), None)])
    engine = make_engine(ledger, builder.session_id)
    for i in range(400):
        small_turn(builder, i)
        if engine.prepare().actions:
            break
    for entry in ledger.entries(builder.session_id, kinds=("projection",)):
        assert failing[0].id not in entry.payload["result_ids"]  # type: ignore[operator]


def test_context_overhead_refuses_before_any_conversation(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("hi")
    huge = FixedParts("system", "rule " * 20_000, (BASH,))
    engine = ContextEngine(
        ledger,
        builder.session_id,
        make_engine(ledger, builder.session_id).settings,
        huge,
        model="gpt-4o",
    )
    count = len(ledger.entries(builder.session_id))
    with pytest.raises(ContextOverheadError, match="custom instructions 20,0"):
        engine.prepare()
    assert len(ledger.entries(builder.session_id)) == count


def test_pressure_loop_stops_after_two_fruitless_derivations(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Go.")
    # The fixed parts alone fill the room past the threshold (~13,000 tokens; the reserve
    # shrinks to half of what the window leaves, ~1,180, so the threshold is ~12,540): fixed
    # parts + checkpoint can never get under it, so no derivation progresses.
    heavy = FixedParts("system", "rule " * 13_600, (BASH,))
    engine = ContextEngine(
        ledger,
        builder.session_id,
        make_engine(ledger, builder.session_id).settings,
        heavy,
        model="gpt-4o",
    )

    def fill_until_error() -> None:
        for i in range(400):
            small_turn(builder, i)
            engine.prepare()

    with pytest.raises(ContextPressureLoopError, match="left the context over its threshold"):
        fill_until_error()
    checkpoints = ledger.entries(builder.session_id, kinds=("checkpoint",))
    assert len(checkpoints) == 2


def test_context_length_recalibrates_and_next_prepare_relieves(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Go.")
    for i in range(40):
        small_turn(builder, i)
    engine = make_engine(ledger, builder.session_id)
    view = engine.prepare()
    assert view.actions == ()
    engine.on_context_length(
        ContextLengthError("prompt is too long", reported_tokens=17_000, limit_tokens=16_384)
    )
    calibration = ledger.entries(builder.session_id, kinds=("context.calibrated",))[-1]
    assert calibration.payload["source"] == "context_length"
    assert calibration.payload["measured_tokens"] == 17_000
    retry = engine.prepare()
    assert retry.actions in (("projection",), ("checkpoint",))
    assert retry.estimated_tokens <= retry.usable_tokens


def test_output_reserve_is_sized_from_outputs_and_grows_on_output_length(ledger: Ledger) -> None:
    builder = SessionBuilder(ledger, window=65_536)
    builder.user("Go.")
    engine = ContextEngine(
        ledger,
        builder.session_id,
        EngineSettings(65_536, max_output_tokens=16_000),
        FIXED,
        model="gpt-4o",
    )
    assert engine.output_reserve() == 4_096
    for out in (2_500, 3_000, 2_800):
        builder.answer("x", usage=Usage(100, 0, 0, out))
    assert engine.output_reserve() == 6_000
    builder.append(
        "response.discarded",
        {
            "reason": "OUTPUT_LENGTH",
            "message": message_to_json(user_text("partial")),
            "usage": Usage().to_json(),
            "output_reserve": 6_000,
        },
    )
    assert engine.grow_output_reserve() == 12_000
    builder.append(
        "response.discarded",
        {
            "reason": "OUTPUT_LENGTH",
            "message": None,
            "usage": Usage().to_json(),
            "output_reserve": 16_000,
        },
    )
    with pytest.raises(OutputLengthError):
        engine.grow_output_reserve()
    # A fresh engine on the same ledger computes the same reserve (resume).
    again = ContextEngine(
        ledger,
        builder.session_id,
        EngineSettings(65_536, max_output_tokens=16_000),
        FIXED,
        model="gpt-4o",
    )
    assert again.output_reserve() == engine.output_reserve() == 16_000


def read_turn(builder: SessionBuilder, i: int) -> None:
    builder.turn(
        f"Reading part {i}.",
        [("Read", {"path": f"src/r{i}.py"}, listing(f"r{i}", 60), None)],
    )


def test_compact_now_and_requested_compaction(ledger: Ledger, builder: SessionBuilder) -> None:
    # Histories longer than a checkpoint's verbatim tail: each compaction makes the view smaller.
    builder.user("Go.")
    for i in range(8):
        read_turn(builder, i)
    engine = make_engine(ledger, builder.session_id)
    first = engine.compact(by="user")
    assert first.number == 1
    assert first.by == "user"
    for i in range(8, 16):
        read_turn(builder, i)
    builder.append("compact.requested", {"by": "user"})
    assert engine.pending_compaction() == "user"
    view = engine.prepare()
    assert view.actions == ("checkpoint",)
    assert view.checkpoint_number == 2
    assert engine.pending_compaction() is None
    assert [c.number for c in engine.checkpoints()] == [1, 2]


def test_the_cost_model_and_the_landing_rule() -> None:
    from comal.context.relief.pressure import (
        CACHED_RATE,
        TIE_PRECISION,
        Growth,
        landing,
        measure_growth,
        stretch_cost,
    )
    from comal.context.view.build import PartCost

    # re-send spread over the stretch + cached re-reads + growth, by hand.
    assert stretch_cost(2_000, 1_000, 10_000, 500) == pytest.approx(
        1_000 * 500 / 8_000 + CACHED_RATE * 12_000 / 2 + 500
    )
    assert stretch_cost(2_000, 1_000, 10_000, 500) < stretch_cost(6_000, 1_000, 10_000, 500)
    assert stretch_cost(10_000, 0, 10_000, 500) == float("inf")
    parts = [
        PartCost(1, 50, "text", role="user"),
        PartCost(2, 30, "call", role="assistant"),
        PartCost(3, 400, "full", role="result"),
        PartCost(4, 20, "call", role="assistant"),
        PartCost(5, 100, "full", role="result"),
    ]
    # The user text before the first call is no call's growth.
    assert measure_growth(parts) == Growth(550 / 2, 430, 2)
    assert measure_growth(parts, since_seq=3) == Growth(120, 120, 1)
    assert measure_growth(parts, since_seq=9).mean == pytest.approx(275)
    # The landing is the largest size whose stretch ties with the deepest cut's.
    growth = Growth(1_500, 4_000, 40)
    floor, threshold, fixed = 6_000, 100_000, 2_000
    land = landing(floor, threshold, fixed, growth)
    deepest = stretch_cost(floor, floor - fixed, threshold, growth.mean)
    assert floor < land < threshold - growth.stretch_room
    assert stretch_cost(land, land - fixed, threshold, growth.mean) <= (1 + TIE_PRECISION) * deepest
    assert (
        stretch_cost(land + 2, land + 2 - fixed, threshold, growth.mean)
        > (1 + TIE_PRECISION) * deepest
    )
    # A larger window (threshold) leaves a larger view for the same session.
    assert landing(floor, 2 * threshold, fixed, growth) > land
    # No room for one more call of the largest kind: aim below the deepest normal cut.
    assert landing(floor, floor + 1_000, fixed, growth) == floor + 1_000 - growth.stretch_room


def test_the_threshold_is_a_share_of_the_window_buffer_included() -> None:
    from comal.context.measure.budget import Budget

    # 90 % of 64,000 is 57,600; the reserve and margin (the buffer row) are part of that use.
    budget = Budget(64_000, 4_096, 4_000, 0.90)
    assert budget.usable == 55_904
    assert budget.threshold == 57_600 - 4_096 - 4_000
    assert budget.threshold < int(budget.usable * 0.90)
    # The whole window as the share: pressure only when the usable room is full.
    assert Budget(64_000, 4_096, 4_000, 1.0).threshold == budget.usable
    # A reserve that nearly fills the window: half the usable room is still left to grow in.
    tight = Budget(10_000, 8_000, 625, 0.90)
    assert tight.usable == 1_375
    assert tight.threshold == 687
    assert tight.target <= tight.threshold
