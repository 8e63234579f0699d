"""The incremental view builder builds exactly what `build_view` builds, step after step."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from comal.context.engine import ContextEngine
from comal.context.relief.recorded import view_state
from comal.context.view.build import Assembly, ViewBuilder, ViewState, build_view
from comal.context.view.conversation import conversation_blocks
from comal.errors import CompactNotSmallerError
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import FIXED, listing, make_engine

# One step of a session: a user message, an answer, a turn of 1-3 calls, a call whose result
# comes later, or a pressure decision the engine records.
STEP = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 40)),
    st.tuples(st.just("answer"), st.integers(1, 40)),
    st.tuples(st.just("turn"), st.integers(1, 3)),
    st.tuples(st.just("late"), st.integers(0, 400)),
    st.tuples(st.just("compact"), st.integers(0, 0)),
)


def _apply(step: tuple[str, int], builder: SessionBuilder, engine: ContextEngine) -> None:
    kind, size = step
    if kind == "user":
        builder.user("please " * size)
    elif kind == "answer":
        builder.answer("done " * size)
    elif kind == "turn":
        builder.turn(
            "Running.",
            [("Bash", {"command": f"r{i}"}, listing(f"t{i}", 20 * i + 1), 0) for i in range(size)],
        )
    elif kind == "late":
        _, (call_id,) = builder.assistant("Reading.", [("Bash", {"command": "cat"})])
        engine.assemble()  # the call is still waiting for its result here
        builder.result(call_id, "Bash", listing("late", size), exit_code=0)
    else:
        # A refused compaction is recorded too, and the view stays as it was.
        with contextlib.suppress(CompactNotSmallerError):
            engine.compact(by="user")


def _same_as_pure(engine: ContextEngine, builder: ViewBuilder, state: ViewState) -> Assembly:
    blocks = conversation_blocks(engine.entries())
    pure = build_view(blocks, state, FIXED, engine.texts(), engine.counter)
    assert builder.build(blocks, state, FIXED, engine.texts(), engine.counter) == pure
    return pure


@settings(max_examples=25, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=14))
def test_incremental_build_equals_pure_build(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int]]
) -> None:
    path = tmp_path_factory.mktemp("views") / "ledger.db"
    with Ledger.open(path, durable=False) as ledger:
        builder = SessionBuilder(ledger, model="gpt-4o", window=16_384)
        builder.user("start")
        engine = make_engine(ledger, builder.session_id)
        incremental = ViewBuilder()
        for step in steps:
            _apply(step, builder, engine)
            state = view_state(engine.entries())
            # The engine's own builder (the recorded state) and a second one agree with it.
            assert engine.assemble() == _same_as_pure(engine, incremental, state)
        # A state other than the last one built starts over, and gives the pure view too.
        _same_as_pure(engine, incremental, ViewState())
