"""Checkpoint text: what it carries, and what it leaves to the verbatim tail and to references."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from comal.context.engine import ContextEngine, EngineSettings, FixedParts
from comal.context.relief.evidence_names import INDEX_CALL, named_ordinals
from comal.ledger.entry import Entry
from comal.ledger.store import Ledger
from comal.messages import ToolResultPart
from comal.testing.sessions import SessionBuilder, ToolStep
from tests.unit.context.conftest import BASH, listing, make_engine

REMINDER = "Please answer with exactly one command in a fenced block."


def command_turns(builder: SessionBuilder, count: int, lines: int = 3) -> list[Entry]:
    """`count` turns of one shell command each; returns their results, oldest first."""
    results = []
    for i in range(count):
        results += builder.turn(
            f"Looking at part {i}.",
            [("Bash", {"command": f"grep -rn part{i} src"}, listing(f"p{i}", lines), 0)],
        )
    return results


def test_a_message_sent_many_times_appears_once(ledger: Ledger, builder: SessionBuilder) -> None:
    task = builder.user("Fix the parser.")
    reminders = []
    for _ in range(3):
        # Outputs large enough that a checkpoint makes the view smaller (else /compact refuses).
        command_turns(builder, 1, lines=60)
        reminders.append(builder.user(REMINDER))
    command_turns(builder, 4)
    checkpoint = make_engine(ledger, builder.session_id).compact(by="user")
    request = checkpoint.text.split("## Request", 1)[1].split("## Work state", 1)[0]
    assert request.count(REMINDER) == 1
    assert f"[sent 3 times, first as {reminders[0].id}]" in request
    # Shown where it was last sent, after the task.
    assert request.index(task.id) < request.index(reminders[-1].id)


def test_repeats_that_differ_only_in_numbers_appear_once(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Fix the parser.")
    reminders = []
    for found in (4, 3, 2):
        command_turns(builder, 1, lines=60)
        reminders.append(builder.user(f"Exactly one action, please: found {found} actions."))
    builder.user("Also keep 2 tests.")
    command_turns(builder, 4)
    checkpoint = make_engine(ledger, builder.session_id).compact(by="user")
    request = checkpoint.text.split("## Request", 1)[1].split("## Work state", 1)[0]
    # Shown once, as last sent; the first copy named by reference.
    assert "found 2 actions" in request
    assert "found 4 actions" not in request
    assert "found 3 actions" not in request
    assert f"[sent 3 times with other numbers, first as {reminders[0].id}]" in request
    # A message of another shape is its own ask.
    assert "Also keep 2 tests." in request


def test_what_the_tail_shows_is_not_repeated(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.user("Survey the source tree.")
    results = command_turns(builder, 30, lines=40)
    checkpoint = make_engine(ledger, builder.session_id).compact(by="user")
    in_tail = [r for r in results if r.seq >= checkpoint.tail_from_seq]
    covered = [r for r in results if r.seq < checkpoint.tail_from_seq]
    assert in_tail
    assert covered
    assert not [r.id for r in in_tail if r.id in checkpoint.text]
    ordinal_of = {r.id: n for n, r in enumerate(results, start=1)}
    assert not [r for r in in_tail if f" · E{ordinal_of[r.id]}\n" in checkpoint.text + "\n"]
    evidence = checkpoint.text.split("## Evidence", 1)[1]
    work = checkpoint.text.split("## Work state", 1)[1].split("## Evidence", 1)[0]
    # The work state names its results by ordinal, at the end of their lines: the newest
    # covered command among them.
    in_work = {int(n) for n in re.findall(r" · E([0-9]+)$", work, re.MULTILINE)}
    assert ordinal_of[covered[-1].id] in in_work
    assert not [r for r in covered if r.id in work]
    # Every covered output is named: by the work state, else by the evidence list (once).
    listed = named_ordinals(evidence)
    for result in covered:
        ordinal = ordinal_of[result.id]
        assert (ordinal in in_work) != (ordinal in listed or result.id in evidence), ordinal
    assert INDEX_CALL in checkpoint.text


def _tail_tokens(ledger: Ledger, session_id: str, window: int) -> tuple[int, int]:
    """(tokens carried before the newest turn, request size) after a /compact at `window`."""
    engine = make_engine(ledger, session_id, window=window)
    engine.compact(by="user")
    asm = engine.assemble()
    newest = max(p.seq for p in asm.parts if p.role == "assistant")
    tail = sum(p.tokens for p in asm.parts if p.seq < newest and p.role != "checkpoint")
    return tail, engine.view().estimated_tokens


def test_the_kept_tail_grows_with_the_window(ledger: Ledger) -> None:
    tails = []
    for window in (32_000, 64_000, 128_000):
        # The same session, recorded once per window.
        builder = SessionBuilder(ledger, model="gpt-4o", window=window)
        builder.user("Survey the source tree.")
        command_turns(builder, 200, lines=40)
        tail, size = _tail_tokens(ledger, builder.session_id, window)
        budget = make_engine(ledger, builder.session_id, window=window).budget()
        # The view stays under the threshold with room for the next calls.
        assert size < budget.threshold
        tails.append(tail)
    assert tails[0] < tails[1] < tails[2]


def test_the_newest_turn_stays_in_view_when_the_landing_leaves_no_room(ledger: Ledger) -> None:
    # Large fixed parts and two ~11 KB outputs per call: even the deepest checkpoint leaves no
    # room under the threshold for one more such call. The turn the next request continues
    # must still be in it, or the model never sees the results it asked for.
    builder = SessionBuilder(ledger, model="gpt-4o", window=16_000)
    builder.user("Check the sequences.")
    fixed = FixedParts("You are a coding agent. " * 200, "Rules. " * 800, (BASH,))
    settings = EngineSettings(window_tokens=16_000, max_output_tokens=4_096)
    engine = ContextEngine(ledger, builder.session_id, settings, fixed, model="gpt-4o")
    numbers = "\n".join(str(i) for i in range(2_500))
    events = 0
    for i in range(8):
        steps: list[ToolStep] = [
            ("Bash", {"command": f"seq {i} a"}, numbers, 0),
            ("Bash", {"command": f"seq {i} b"}, numbers, 0),
        ]
        results = builder.turn(f"Step {i}.", steps)
        view = engine.prepare()
        events += len(view.actions)
        shown = {p.call_id for m in view.messages for p in m.parts if isinstance(p, ToolResultPart)}
        assert {r.payload["call_id"] for r in results} <= shown
    assert events


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from([2, 8, 40, 120, 400]), min_size=120, max_size=220),
    st.integers(min_value=0, max_value=3),
)
def test_the_kept_tail_never_shrinks_as_the_window_grows(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], asks: int
) -> None:
    # Generated sessions (outputs of a few to a few hundred lines, a few asks): the same
    # session compacted at a larger window keeps at least as much verbatim conversation.
    with Ledger.open(tmp_path_factory.mktemp("tail") / "ledger.db", durable=False) as ledger:
        tails = []
        for window in (32_000, 64_000, 128_000):
            builder = SessionBuilder(ledger, model="gpt-4o", window=window)
            builder.user("Survey the source tree.")
            for i, lines in enumerate(sizes):
                if asks and i % (len(sizes) // (asks + 1)) == 0 and i:
                    builder.user(f"Now look at part {i}.")
                builder.turn(
                    f"Looking at part {i}.",
                    [("Bash", {"command": f"grep -rn part{i} src"}, listing(f"p{i}", lines), 0)],
                )
            tail, size = _tail_tokens(ledger, builder.session_id, window)
            assert size < make_engine(ledger, builder.session_id, window=window).budget().threshold
            tails.append(tail)
        assert tails[0] <= tails[1] <= tails[2]
