"""After every kind of pressure event, a resumed engine rebuilds the very same request."""

from __future__ import annotations

from collections.abc import Callable

from comal.context.engine import ContextEngine, EngineSettings
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import FIXED, listing, make_engine


def _table(k: int) -> str:
    return "".join(f"{k},{i},{i * i}\n" for i in range(500))


def _resumed_identically(ledger: Ledger, session_id: str, engine: ContextEngine) -> None:
    sent = engine.view()
    count = len(ledger.entries(session_id))
    # A new process: a fresh engine over the same ledger, no memo carried over.
    fresh = make_engine(ledger, session_id)
    again = fresh.prepare()
    assert again.actions == ()
    assert again.system == sent.system
    assert again.messages == sent.messages
    assert again.estimated_tokens == sent.estimated_tokens
    assert len(ledger.entries(session_id)) == count


def _event(ledger: Ledger, session_id: str) -> dict[str, object]:
    kinds = ("projection", "checkpoint")
    return dict(ledger.entries(session_id, kinds=kinds)[-1].payload)


def test_after_a_projection(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.user("Check the tables.")
    engine = make_engine(ledger, builder.session_id)
    for k in range(6):
        builder.turn(f"Reading {k}.", [("Read", {"path": f"data/p{k}.csv"}, _table(k), None)])
        if engine.prepare().actions:
            break
    assert _event(ledger, builder.session_id)["trigger"] == "threshold"
    assert ledger.entries(builder.session_id, kinds=("projection",))
    _resumed_identically(ledger, builder.session_id, engine)


def test_after_a_checkpoint_under_pressure(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.user("Survey the tree.")
    engine = make_engine(ledger, builder.session_id)
    for i in range(60):
        builder.turn(
            f"Part {i}.", [("Bash", {"command": f"grep -rn p{i}"}, listing(str(i), 30), 0)]
        )
        if "checkpoint" in engine.prepare().actions:
            break
    event = _event(ledger, builder.session_id)
    assert (event["by"], event["trigger"]) == ("pressure", "threshold")
    _resumed_identically(ledger, builder.session_id, engine)


def test_after_a_compact_the_user_asked_for(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.user("Survey the tree.")
    for i in range(8):
        builder.turn(
            f"Part {i}.", [("Bash", {"command": f"grep -rn p{i}"}, listing(str(i), 30), 0)]
        )
    engine = make_engine(ledger, builder.session_id)
    engine.compact(by="user")
    assert _event(ledger, builder.session_id)["by"] == "user"
    _resumed_identically(ledger, builder.session_id, engine)


def _clocked(ledger: Ledger, session_id: str, clock: Callable[[], int]) -> ContextEngine:
    settings = EngineSettings(window_tokens=16_384, max_output_tokens=4_096)
    return ContextEngine(ledger, session_id, settings, FIXED, model="gpt-4o", clock=clock)


def test_after_early_relief_on_a_cold_cache(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.user("Survey the tree.")
    late = [0]
    engine = _clocked(ledger, builder.session_id, lambda: late[0])
    budget = engine.budget()
    # Grow past where events land (the target) but stay under the threshold.
    for i in range(60):
        builder.turn(f"Part {i}.", [("Bash", {"command": f"grep -rn p{i}"}, listing(str(i), 8), 0)])
        last = ledger.entries(builder.session_id)[-1].created_at
        late[0] = last  # a warm cache: no early relief
        view = engine.prepare()
        assert view.actions == ()
        if view.estimated_tokens > budget.target:
            break
    assert budget.target < view.estimated_tokens <= budget.threshold
    # Six minutes idle: the provider's cache (five minutes) has expired.
    late[0] = last + 6 * 60 * 1000
    relieved = engine.prepare()
    assert relieved.actions
    assert _event(ledger, builder.session_id)["trigger"] == "cache_cold"
    assert relieved.estimated_tokens < view.estimated_tokens
    # Once per model call: preparing again does nothing more.
    assert engine.prepare().actions == ()
    _resumed_identically(ledger, builder.session_id, engine)


def test_after_relief_at_a_turn_boundary(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.user("Survey the tree.")
    engine = make_engine(ledger, builder.session_id)
    budget = engine.budget()
    before = engine.prepare().estimated_tokens
    for i in range(200):
        builder.turn(
            f"Part {i}.", [("Bash", {"command": f"grep -rn p{i}"}, listing(str(i), 40), 0)]
        )
        view = engine.prepare()
        assert view.actions == ()
        growth, before = view.estimated_tokens - before, view.estimated_tokens
        # Stop when one more call of this size would cross the threshold.
        if view.estimated_tokens + growth > budget.threshold:
            break
    builder.answer("Surveyed so far.")
    builder.user("Now the tests too.")
    # A new turn starts under the threshold, but its first call would cross it mid-loop:
    # relief now, at the boundary.
    relieved = engine.prepare()
    assert relieved.actions
    assert _event(ledger, builder.session_id)["trigger"] == "turn_boundary"
    _resumed_identically(ledger, builder.session_id, engine)
