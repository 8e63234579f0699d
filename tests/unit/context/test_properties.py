"""Properties of the engine over random sessions (hypothesis), each in a fresh real ledger."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from comal.context.engine import ContextEngine
from comal.context.measure.tokens import MemoCounter, counter_for_model
from comal.context.relief.checkpoint import derive
from comal.context.relief.evidence_names import named_ordinals
from comal.context.view.invariants import check_pairs
from comal.ledger.records import SessionRewound
from comal.ledger.store import Ledger
from comal.messages import ToolResultPart
from comal.testing.sessions import SessionBuilder, ToolStep
from tests.unit.context.conftest import make_engine

# A step: ("user", size) or ("turn", [(output lines, exit code), ...]).
output = st.tuples(st.sampled_from([0, 1, 3, 20, 120, 400, 1_500]), st.sampled_from([0, 0, 0, 1]))
step = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 40)),
    st.tuples(st.just("turn"), st.lists(output, min_size=1, max_size=3)),
)
script = st.lists(step, min_size=1, max_size=45)
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _apply(builder: SessionBuilder, item: tuple, n: int) -> None:  # type: ignore[type-arg]
    steps: list[ToolStep]
    kind, value = item
    if kind == "user":
        builder.user(f"request {n}: " + "please " * value)
        return
    steps = [
        (
            "Bash",
            {"command": f"run {n}.{k}"},
            "".join(f"src/f{n}.py:{i}: out {i}\n" for i in range(lines)),
            code,
        )
        for k, (lines, code) in enumerate(value)
    ]
    builder.turn(f"turn {n}", steps)


@contextmanager
def _session(window: int) -> Iterator[tuple[Ledger, SessionBuilder, ContextEngine]]:
    """A fresh real ledger (hypothesis examples cannot share pytest's `tmp_path`) with a
    started session and an engine at `window`."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        Ledger.open(Path(tmp) / "l.db", durable=False) as ledger,
    ):
        builder = SessionBuilder(ledger)
        builder.user("start")
        yield ledger, builder, make_engine(ledger, builder.session_id, window=window)


def _flat(messages: tuple) -> list:  # type: ignore[type-arg]
    return [(m.role, p) for m in messages for p in m.parts]


@SETTINGS
@given(script)
def test_views_pair_fit_grow_by_appending_and_rebuild_identically(steps: list) -> None:  # type: ignore[type-arg]
    with _session(12_000) as (ledger, builder, engine):
        previous = engine.prepare()
        for n, item in enumerate(steps):
            _apply(builder, item, n)
            view = engine.prepare()
            # Every call has its result right after it; the view fits.
            check_pairs(view.messages)
            assert view.estimated_tokens <= view.usable_tokens
            # The reply may take all the window leaves beside the input (at least the
            # reserve, at most the model's maximum output).
            budget = engine.budget()
            assert budget.output_reserve <= view.output_reserve <= 4_096
            assert view.estimated_tokens + view.output_reserve + budget.margin <= 12_000 or (
                view.output_reserve == budget.output_reserve
            )
            if not view.actions:
                before = _flat(previous.messages)
                assert _flat(view.messages)[: len(before)] == before
            # Idempotent: preparing again changes nothing and appends nothing.
            count = len(ledger.entries(builder.session_id))
            again = engine.prepare()
            assert again.actions == ()
            assert again.messages == view.messages
            assert len(ledger.entries(builder.session_id)) == count
            # Deterministic: a fresh engine on the same ledger builds the same bytes.
            assert (
                make_engine(ledger, builder.session_id, window=12_000).view().messages
                == view.messages
            )
            previous = view


@SETTINGS
@given(script)
def test_derivation_is_byte_identical_when_rerun(steps: list) -> None:  # type: ignore[type-arg]
    with _session(12_000) as (ledger, builder, _):
        # Earlier work a checkpoint replaces, so that compacting makes the view smaller
        # whatever the random steps after it (else a person's /compact is refused).
        for n in range(8):
            _apply(builder, ("turn", [(60, 0)]), -1 - n)
        for n, item in enumerate(steps):
            _apply(builder, item, n)
        engine = make_engine(ledger, builder.session_id, window=12_000)
        entries = engine.entries()
        blocks = engine.conversation()  # the engine's own parse of the ledger
        drafts = [
            derive(
                1,
                entries,
                blocks,
                engine.state(),
                engine.texts(),
                MemoCounter(counter_for_model("gpt-4o")),
                engine.budget(),
                40,
            )
            for _ in range(2)
        ]
        assert drafts[0] == drafts[1]
        first = engine.compact(by="user")
        second_engine = make_engine(ledger, builder.session_id, window=12_000)
        assert second_engine.view().messages[0].parts[0].text == first.text  # type: ignore[union-attr]


def _named_outputs(ledger: Ledger, session_id: str, messages: tuple) -> set[str]:  # type: ignore[type-arg]
    """`tool.result` ids the request shows or names by an exact reference (id or ordinal)."""
    text = "\n".join(
        getattr(p, "text", "") or getattr(p, "content", "") for m in messages for p in m.parts
    )
    shown = {p.call_id for m in messages for p in m.parts if isinstance(p, ToolResultPart)}
    ordinals = named_ordinals(text)
    named = set()
    results = [e for e in ledger.entries(session_id) if e.kind == "tool.result"]
    for ordinal, entry in enumerate(results, start=1):
        if entry.payload.get("call_id") in shown or entry.id in text or ordinal in ordinals:
            named.add(entry.id)
    return named


@SETTINGS
@given(script, st.sampled_from([9_000, 12_000, 24_000]))
# Many events for sure: small and large outputs mixed, far over the window.
@example([("turn", [(120, 0), (3, 1)]), ("turn", [(400, 0)])] * 20, 9_000)
def test_every_earlier_output_stays_named_after_any_event(steps: list, window: int) -> None:  # type: ignore[type-arg]
    with _session(window) as (ledger, builder, engine):
        events = 0
        for n, item in enumerate(steps):
            _apply(builder, item, n)
            view = engine.prepare()
            events += len(view.actions)
            if not events:
                continue
            results = {e.id for e in ledger.entries(builder.session_id) if e.kind == "tool.result"}
            # Every output is in view or named by its exact reference: never only via an index.
            assert _named_outputs(ledger, builder.session_id, view.messages) == results


rewinding_script = st.lists(
    st.one_of(step, st.tuples(st.just("rewind"), st.integers(0, 10_000))), min_size=1, max_size=30
)


@SETTINGS
@given(rewinding_script)
def test_a_running_engine_sends_what_a_new_one_would_across_rewinds(steps: list) -> None:  # type: ignore[type-arg]
    with _session(12_000) as (ledger, builder, engine):
        engine.prepare()
        for n, item in enumerate(steps):
            if item[0] == "rewind":
                # Back to before one of the user's messages so far (a `/rewind N`).
                asks = ledger.entries(builder.session_id, kinds=("message.user",))
                point = asks[item[1] % len(asks)].seq - 1
                record = SessionRewound(point, f"before {point}", (), False, True, ())
                ledger.append_record(builder.session_id, record)
                builder.user(f"again {n}")
            else:
                _apply(builder, item, n)
            view = engine.prepare()
            check_pairs(view.messages)
            fresh = make_engine(ledger, builder.session_id, window=12_000).view()
            assert fresh.messages == view.messages
            assert fresh.estimated_tokens == view.estimated_tokens
