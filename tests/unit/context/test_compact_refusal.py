"""A person's compaction that would not make the view smaller is refused, with its figures.

On a short history a checkpoint (its text plus the verbatim tail it keeps) is larger than what
it replaces; deriving it would grow the request. The refusal is recorded as `compact.cancelled`
(reason `not_smaller`), nothing else changes, and the next request is built as before.
"""

from __future__ import annotations

import re

import pytest

from comal.errors import CompactNotSmallerError
from comal.ledger.entry import Entry
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import listing, make_engine


def short_session(builder: SessionBuilder) -> None:
    builder.user("Fix the parser.")
    builder.turn("Looking.", [("Bash", {"command": "grep -n parse src"}, "src/a.py:3: parse\n", 0)])


def snapshot(entries: list[Entry]) -> list[tuple[str, str, object]]:
    return [(e.id, e.kind, e.payload) for e in entries]


def figures(message: str) -> tuple[int, int]:
    found = re.search(r"~([\d,]+) → ~([\d,]+) tokens", message)
    assert found is not None, message
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def test_a_compaction_that_would_grow_the_view_is_refused_and_recorded(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    short_session(builder)
    engine = make_engine(ledger, builder.session_id)
    before_view = engine.view()
    recorded = snapshot(ledger.entries(builder.session_id))
    with pytest.raises(CompactNotSmallerError) as raised:
        engine.compact(by="user")
    error = raised.value
    assert error.exit_code == 5
    assert "would not make the view smaller" in error.message
    # The figures said are the ones recorded, and they really do not shrink.
    assert figures(error.message) == (error.before_tokens, error.after_tokens)
    assert error.after_tokens >= error.before_tokens
    assert error.before_tokens == before_view.estimated_tokens
    entries = ledger.entries(builder.session_id)
    # Nothing recorded is lost or changed; one entry is added: the refusal.
    assert snapshot(entries[: len(recorded)]) == recorded
    assert [e.kind for e in entries[len(recorded) :]] == ["compact.cancelled"]
    assert entries[-1].payload == {
        "by": "engine",
        "reason": "not_smaller",
        "requested_by": "user",
        "before_tokens": error.before_tokens,
        "after_tokens": error.after_tokens,
    }
    assert engine.checkpoints() == []
    # The next request is the one that would have been sent, by this engine or a fresh one.
    view = engine.prepare()
    assert view.messages == before_view.messages
    assert view.actions == ()
    assert view.compact_refused is None
    assert make_engine(ledger, builder.session_id).view().messages == before_view.messages


def test_a_queued_compaction_that_would_not_shrink_is_dropped_at_the_boundary(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    short_session(builder)
    engine = make_engine(ledger, builder.session_id)
    before_view = engine.view()
    builder.append("compact.requested", {"by": "user"})
    assert engine.pending_compaction() == "user"
    view = engine.prepare()
    assert view.compact_refused is not None
    assert "would not make the view smaller" in view.compact_refused
    assert view.actions == ()
    assert view.messages == before_view.messages
    assert engine.pending_compaction() is None
    kinds = [e.kind for e in ledger.entries(builder.session_id)]
    assert kinds[-2:] == ["compact.requested", "compact.cancelled"]
    cancelled = ledger.entries(builder.session_id, kinds=("compact.cancelled",))[0]
    assert figures(view.compact_refused) == (
        cancelled.payload["before_tokens"],
        cancelled.payload["after_tokens"],
    )
    assert engine.checkpoints() == []
    # Said once: preparing again appends nothing and refuses nothing.
    count = len(kinds)
    again = engine.prepare()
    assert again.compact_refused is None
    assert again.messages == view.messages
    assert len(ledger.entries(builder.session_id)) == count


def test_the_same_session_compacts_once_its_history_is_long_enough(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    short_session(builder)
    engine = make_engine(ledger, builder.session_id)
    with pytest.raises(CompactNotSmallerError):
        engine.compact(by="user")
    for i in range(8):
        builder.turn("Reading.", [("Read", {"path": f"src/m{i}.py"}, listing(f"m{i}", 60), None)])
    checkpoint = engine.compact(by="user")
    assert checkpoint.number == 1
    assert checkpoint.after_tokens < checkpoint.before_tokens
    assert "Fix the parser." in checkpoint.text


def test_a_provider_overflow_still_derives_whatever_the_size(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    # Only a person's request is judged by size: recovery from a provider's refusal must act.
    short_session(builder)
    engine = make_engine(ledger, builder.session_id)
    checkpoint = engine.compact(by="context_window_exceeded")
    assert checkpoint.number == 1
    assert ledger.entries(builder.session_id, kinds=("compact.cancelled",)) == []
