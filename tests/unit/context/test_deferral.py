"""Pressure mid tool loop waits for the turn boundary while the rest of the turn fits."""

from __future__ import annotations

from comal.context.engine import ContextEngine
from comal.context.relief.deferral import DEFERRED_KIND, remaining_calls
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import listing, make_engine
from tests.unit.context.test_resume_events import _event

WINDOW = 40_000


def _small(builder: SessionBuilder, i: int) -> None:
    builder.turn(f"Step {i}.", [("Bash", {"command": f"ls d{i}"}, listing(str(i), 4), 0)])


def _first_turn(builder: SessionBuilder, engine: ContextEngine, calls: int) -> None:
    """A short opening turn, then a turn of `calls` small calls ending ~2,000 tokens under
    the threshold (the same small calls continue the next turn)."""
    builder.user("Start.")
    _small(builder, 0)
    builder.answer("Started.")
    engine.prepare()
    per_line = engine.counter.count(listing("intro", 100)) / 100
    step = engine.prepare().estimated_tokens
    _small(builder, 1)
    step = engine.prepare().estimated_tokens - step
    room = engine.budget().threshold - engine.prepare().estimated_tokens - 2_000 - calls * step
    builder.user("Read this first:\n" + listing("intro", int(room / per_line)))
    for i in range(calls):
        _small(builder, i + 2)
        assert engine.prepare().actions == ()
    builder.answer("Read.")


def _cross(builder: SessionBuilder, engine: ContextEngine, start: int) -> int:
    """Small calls of a new turn until the request passes the threshold; returns the count."""
    for i in range(start, start + 200):
        _small(builder, i)
        view = engine.prepare()
        if view.estimated_tokens > engine.budget().threshold or view.actions:
            return i - start + 1
    raise AssertionError("the threshold was never reached")


def test_pressure_mid_loop_waits_for_the_turn_boundary_and_records_why(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    engine = make_engine(ledger, builder.session_id, WINDOW)
    _first_turn(builder, engine, 40)
    builder.user("Now the second directory.")
    done = _cross(builder, engine, 100)
    view = engine.view()
    budget = engine.budget()

    # Over the threshold, mid loop, with room for the rest of a turn as long as the first:
    # nothing is relieved, the request still fits, and the deferral is recorded once.
    assert view.estimated_tokens > budget.threshold
    assert view.estimated_tokens <= budget.usable
    assert done < 41
    assert remaining_calls(engine.conversation()) == 41 - done
    assert ledger.entries(builder.session_id, kinds=("projection", "checkpoint")) == []
    (deferred,) = ledger.entries(builder.session_id, kinds=(DEFERRED_KIND,))
    options = deferred.payload["options"]
    assert isinstance(options, list)
    assert [o["action"] for o in options if isinstance(o, dict)] == ["defer", "checkpoint"]
    assert deferred.payload["until"] == "turn_boundary"
    _small(builder, 500)
    assert engine.prepare().actions == ()
    assert len(ledger.entries(builder.session_id, kinds=(DEFERRED_KIND,))) == 1

    # At the boundary the event happens, deep, and says it was placed there.
    builder.answer("Second directory read.")
    builder.user("And the third.")
    relieved = engine.prepare()
    assert relieved.actions
    assert _event(ledger, builder.session_id)["trigger"] == "turn_boundary"
    assert relieved.estimated_tokens < budget.target
    fresh = make_engine(ledger, builder.session_id, WINDOW)
    assert fresh.prepare().messages == relieved.messages


def test_a_turn_longer_than_any_measured_one_is_relieved_at_once(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    engine = make_engine(ledger, builder.session_id, WINDOW)
    _first_turn(builder, engine, 3)
    builder.user("Now the second directory.")
    _cross(builder, engine, 100)

    # The session gives no measure of when this loop ends: relief now, as the threshold asks.
    assert ledger.entries(builder.session_id, kinds=(DEFERRED_KIND,)) == []
    assert _event(ledger, builder.session_id)["trigger"] == "threshold"


def test_a_deferral_never_lets_the_request_past_the_usable_room(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    engine = make_engine(ledger, builder.session_id, WINDOW)
    _first_turn(builder, engine, 40)
    builder.user("Now the second directory.")
    _cross(builder, engine, 100)
    assert ledger.entries(builder.session_id, kinds=(DEFERRED_KIND,))
    # The loop then grows far faster than measured: relief happens mid loop before any
    # request would pass the usable room.
    for i in range(20):
        builder.turn(f"Big {i}.", [("Bash", {"command": "cat log"}, listing(f"b{i}", 90), 0)])
        view = engine.prepare()
        assert view.estimated_tokens <= engine.budget().usable
        if view.actions:
            break
    assert _event(ledger, builder.session_id)["trigger"] == "threshold"
