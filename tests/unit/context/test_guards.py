"""Guards: a provider's stated window limit, and what counts as progress for derivations."""

from __future__ import annotations

import pytest

from comal.context.engine import ContextEngine, EngineSettings, FixedParts
from comal.context.measure.calibration import PROVIDER_WINDOW_SOURCE
from comal.context.view.invariants import check_pairs
from comal.errors import ContextLengthError, ContextPressureLoopError
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import BASH, listing, make_engine


def output_turn(builder: SessionBuilder, i: int, lines: int) -> None:
    builder.turn(
        f"Reading part {i}.",
        [("Bash", {"command": f"cat src/part{i}.log"}, listing(f"p{i}", lines), 0)],
    )


def test_a_provider_limit_below_the_window_becomes_the_window(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Go.")
    for i in range(10):
        output_turn(builder, i, 40)
    engine = make_engine(ledger, builder.session_id, window=16_384)
    first = engine.prepare()
    assert first.actions == ()
    assert first.estimated_tokens > 6_000  # too big for the server's real window
    engine.on_context_length(
        ContextLengthError(
            "This model's maximum context length is 9000 tokens. However, your messages"
            " resulted in 9800 tokens.",
            reported_tokens=9_800,
            limit_tokens=9_000,
        )
    )
    calibration = ledger.entries(builder.session_id, kinds=("context.calibrated",))[-1]
    assert calibration.payload["limit_tokens"] == 9_000
    assert calibration.payload["source"] == "context_length"
    assert engine.window() == (9_000, PROVIDER_WINDOW_SOURCE)
    retry = engine.prepare()
    assert retry.actions in (("projection",), ("checkpoint",))
    budget = engine.budget()
    assert budget.window == 9_000
    # The retried request fits the provider's real window with its reserve.
    assert retry.estimated_tokens + retry.output_reserve <= 9_000
    # A resumed session (a fresh engine over the same ledger) and the report see it too.
    resumed = make_engine(ledger, builder.session_id, window=16_384)
    assert resumed.budget().window == 9_000
    report = resumed.report()
    assert (report.window_tokens, report.window_source) == (9_000, "provider error")


def test_a_limit_at_or_above_the_window_is_not_recorded(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Go.")
    output_turn(builder, 0, 40)
    engine = make_engine(ledger, builder.session_id, window=16_384)
    engine.prepare()
    engine.on_context_length(
        ContextLengthError("too long", reported_tokens=17_000, limit_tokens=20_000)
    )
    calibration = ledger.entries(builder.session_id, kinds=("context.calibrated",))[-1]
    assert "limit_tokens" not in calibration.payload
    assert engine.window() == (16_384, "fallback")


def test_a_derivation_on_every_call_goes_on_while_turns_advance(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    # A 4,500-token window, ~1,800 tokens of fixed parts and outputs of ~900 tokens: after
    # each derivation the next output brings pressure back, so every call derives, some landing
    # above the target. Each one made room and the conversation advanced: the session goes on.
    builder.user("Inspect every part.")
    settings = EngineSettings(window_tokens=4_500, max_output_tokens=1_024)
    fixed = FixedParts("You are a coding agent.", "rule " * 1_800, (BASH,))
    engine = ContextEngine(ledger, builder.session_id, settings, fixed, model="gpt-4o")
    actions = []
    for i in range(12):
        output_turn(builder, i, 40)
        view = engine.prepare()
        check_pairs(view.messages)
        assert view.estimated_tokens <= view.usable_tokens
        actions.append(view.actions)
    assert actions[-8:] == [("checkpoint",)] * 8
    checkpoints = ledger.entries(builder.session_id, kinds=("checkpoint",))
    threshold = engine.budget().threshold
    assert all(c.payload["after_tokens"] <= threshold for c in checkpoints)  # type: ignore[operator]


def test_derivations_with_no_turn_in_between_are_not_progress(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Go.")
    for i in range(6):
        output_turn(builder, i, 40)
    engine = make_engine(ledger, builder.session_id)
    engine.compact(by="pressure")  # turns happened before: progress
    engine.compact(by="pressure")  # nothing new since: no progress
    engine.compact(by="pressure")  # still nothing: the second in a row without progress
    with pytest.raises(ContextPressureLoopError, match="no model turn in between"):
        engine.compact(by="pressure")
    assert len(ledger.entries(builder.session_id, kinds=("checkpoint",))) == 3
    # A person may always compact, where the guard still refuses an automatic derivation
    # (new history, so that the checkpoint makes the view smaller: else it is refused).
    for i in range(6, 12):
        output_turn(builder, i, 40)
    with pytest.raises(ContextPressureLoopError, match="no model turn in between"):
        engine.compact(by="pressure")
    engine.compact(by="user")
    assert len(ledger.entries(builder.session_id, kinds=("checkpoint",))) == 4
