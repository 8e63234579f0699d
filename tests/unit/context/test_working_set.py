"""The working set: measured from the session's own reuse, and never taken out of view."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.context.measure.budget import default_margin
from comal.context.relief.working_set import names, reach_of, working_set
from comal.context.view.entry import whole_limit
from comal.ledger.store import Ledger
from comal.messages import ToolResultPart
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import make_engine


def output(call: int, lines: int) -> str:
    """A grep-like output whose names belong to call `call` alone."""
    return "\n".join(
        f"src/pkg_{call}/mod_{i}.py:{i}: def handler_{call}_{i}(request_id):" for i in range(lines)
    )


def reuse_session(builder: SessionBuilder, distances: list[int], lines: int = 30) -> list[str]:
    """Calls whose messages each name something the output `distance` calls back held;
    returns the result entry ids, oldest first."""
    builder.user("Trace the handlers.")
    ids: list[str] = []
    for call, distance in enumerate(distances):
        source = call - distance
        text = f"Next, handler_{source}_1 again." if source >= 0 else "Starting."
        (result,) = builder.turn(
            text, [("Bash", {"command": f"grep -rn part{call} src"}, output(call, lines), 0)]
        )
        ids.append(result.id)
    return ids


def test_names_are_identifiers_and_paths() -> None:
    found = names("see src/app/main.py: parse_args() in HttpClient, then run 12345 tests")
    assert found == {"src/app/main.py", "parse_args", "HttpClient"}


def test_the_reach_covers_nine_in_ten_reuses() -> None:
    assert reach_of([]) == 1
    assert reach_of([1] * 9 + [7]) == 1
    assert reach_of([1] * 8 + [5, 7]) == 5
    assert reach_of([3, 3, 3]) == 3


@pytest.mark.parametrize("distance", [1, 3, 6])
def test_the_reach_is_measured_from_the_sessions_own_reuse(ledger: Ledger, distance: int) -> None:
    builder = SessionBuilder(ledger, model="gpt-4o", window=128_000)
    reuse_session(builder, [distance] * 20)
    engine = make_engine(ledger, builder.session_id, window=128_000)
    found = working_set(engine.conversation(), engine.texts())
    assert found.reach == distance
    assert found.reuses == 20 - distance
    # The results of the newest `distance` calls, and nothing older.
    newest = [b for b in engine.conversation() if b.role == "assistant"][-distance:]
    assert found.result_ids == {r.entry.id for b in newest for r in b.results}


def test_the_last_read_of_a_file_being_edited_belongs_to_it(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Fix the parser.")
    source = "\n".join(f"def parse_{i}(text):\n    return text" for i in range(200))
    (read,) = builder.turn("", [("Read", {"file_path": "src/parser.py"}, source, 0)])
    for i in range(6):
        builder.turn("", [("Bash", {"command": f"pytest -k case{i}"}, f"case{i} failed", 1)])
    (edit,) = builder.turn("", [("Edit", {"file_path": "src/parser.py"}, "edited", 0)])
    engine = make_engine(ledger, builder.session_id)
    found = working_set(engine.conversation(), engine.texts(), reach=1)
    assert found.result_ids == {read.id, edit.id}
    alone = working_set(engine.conversation(), engine.texts(), reach=1, files=False)
    assert alone.result_ids == {edit.id}


def _shown_whole(view_messages: tuple[object, ...], texts: dict[str, str]) -> set[str]:
    """Call ids whose result the view shows exactly as recorded."""
    shown = set()
    for message in view_messages:
        for part in getattr(message, "parts", ()):
            if isinstance(part, ToolResultPart) and texts.get(part.call_id) == part.content:
                shown.add(part.call_id)
    return shown


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from([1, 1, 2, 3, 5]), min_size=60, max_size=110),
    st.sampled_from([40, 120]),
)
def test_the_working_set_survives_every_event(
    tmp_path_factory: pytest.TempPathFactory, distances: list[int], lines: int
) -> None:
    # Generated sessions with their own reuse patterns, prepared after every call as the loop
    # does at 32k: whenever an event happens, the newest calls of the working set it recorded
    # are in the view that follows, verbatim.
    with Ledger.open(tmp_path_factory.mktemp("ws") / "ledger.db", durable=False) as ledger:
        builder = SessionBuilder(ledger, model="gpt-4o", window=32_000)
        engine = make_engine(ledger, builder.session_id, window=32_000)
        builder.user("Trace the handlers.")
        texts: dict[str, str] = {}
        calls: list[str] = []
        events = 0
        for call, distance in enumerate(distances):
            source = call - distance
            text = f"Next, handler_{source}_1 again." if source >= 0 else "Starting."
            body = output(call, lines)
            (result,) = builder.turn(text, [("Bash", {"command": f"grep part{call}"}, body, 0)])
            call_id = str(result.payload["call_id"])
            texts[call_id] = body
            calls.append(call_id)
            view = engine.prepare()
            if not view.actions:
                continue
            events += 1
            event = ledger.entries(builder.session_id)[-1]
            options = event.payload["options"]
            assert isinstance(options, list)
            chosen = [o for o in options if isinstance(o, dict) and o.get("viable")]
            kept = chosen[0]["working_set"]
            assert isinstance(kept, dict)
            reach = kept["reach_calls"]
            assert isinstance(reach, int)
            assert set(calls[-reach:]) <= _shown_whole(view.messages, texts)
        assert events


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.integers(min_value=50, max_value=3_000),
    st.sampled_from([32_000, 64_000, 128_000]),
    st.sampled_from(["code", "log"]),
)
def test_an_output_that_fits_enters_whole(
    tmp_path_factory: pytest.TempPathFactory, lines: int, window: int, shape: str
) -> None:
    # Any output whose text fits the window's share enters whole, whatever its bytes; one
    # that does not enters as a preview naming its exact reference.
    if shape == "code":
        body = "\n".join(
            f"    result_{i} = compute_value(item_{i}, scale={i})" for i in range(lines)
        )
    else:
        body = "\n".join(f"2026-12-07 12:00:{i % 60:02d} INFO worker-{i} ok" for i in range(lines))
    with Ledger.open(tmp_path_factory.mktemp("entry") / "ledger.db", durable=False) as ledger:
        builder = SessionBuilder(ledger, model="gpt-4o", window=window)
        builder.user("Look.")
        (result,) = builder.turn("", [("Bash", {"command": "cat big"}, body, 0)])
        engine = make_engine(ledger, builder.session_id, window=window)
        view = engine.prepare()
        shown = view.messages[-1].tool_results[0].content
        usable = window - 4_096 - default_margin(window)
        fits = len(body.encode()) <= 20 * 1024 or engine.counter.count(body) <= whole_limit(usable)
        assert (shown == body) == fits
        if not fits:
            assert shown.startswith(f"[ref {result.id} · Bash")
