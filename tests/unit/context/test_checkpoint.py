"""Checkpoint text: what it carries, and what it leaves to the verbatim tail and to references."""

from __future__ import annotations

from comal.context.checkpoint import FACTS_HORIZON_TOKENS
from comal.context.evidence_index import INDEX_CALL
from comal.ledger.entry import Entry
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import listing, make_engine

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
        command_turns(builder, 1)
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
        command_turns(builder, 1)
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
    # The newest covered command is still named, with its exact reference; the rest by range.
    assert covered[-1].id in checkpoint.text
    assert "older: " in checkpoint.text
    assert INDEX_CALL in checkpoint.text


def test_checkpoint_and_tail_stay_within_the_facts_horizon(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Survey the source tree.")
    command_turns(builder, 60, lines=40)
    engine = make_engine(ledger, builder.session_id, window=128_000)
    engine.compact(by="user")
    asm = engine.assemble()
    newest = max(p.seq for p in asm.parts if p.role == "assistant")
    carried = sum(p.tokens for p in asm.parts if p.seq < newest)
    # Everything carried before the newest turn (which is always kept whole) fits the horizon.
    assert carried <= FACTS_HORIZON_TOKENS
    assert sum(1 for p in asm.parts if p.role == "assistant") > 1
