"""After a conversation rewind, a running engine sends what a new engine would: the turns it
went over leave the request (the TUI's `/rewind` keeps the session's engine)."""

from __future__ import annotations

from comal.context.engine import ContextEngine
from comal.ledger.records import SessionRewound
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import listing, make_engine


def _rewind(ledger: Ledger, session_id: str, to_seq: int) -> None:
    record = SessionRewound(
        to_seq=to_seq,
        to="before turn 2",
        files=(),
        files_restored=False,
        conversation=True,
        not_restorable=(),
    )
    ledger.append_record(session_id, record)


def _same_as_a_new_engine(ledger: Ledger, session_id: str, engine: ContextEngine) -> str:
    """The running engine's next request, checked equal to a new engine's, as text."""
    sent = engine.prepare()
    fresh = make_engine(ledger, session_id).prepare()
    assert sent.messages == fresh.messages
    assert sent.estimated_tokens == fresh.estimated_tokens
    return "\n".join(str(part) for message in sent.messages for part in message.parts)


def test_the_turns_a_rewind_went_over_leave_the_running_engines_request(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("First ask.")
    builder.turn("One.", [("Read", {"path": "a.py"}, "alpha = 1\n", None)])
    kept = ledger.entries(builder.session_id)[-1].seq
    builder.user("Second ask, WENT-OVER.")
    builder.turn("Two WENT-OVER.", [("Read", {"path": "b.py"}, "beta WENT-OVER\n", None)])
    engine = make_engine(ledger, builder.session_id)
    assert "WENT-OVER" in _same_as_a_new_engine(ledger, builder.session_id, engine)

    _rewind(ledger, builder.session_id, kept)
    builder.user("Second ask, again.")
    sent = _same_as_a_new_engine(ledger, builder.session_id, engine)
    assert "WENT-OVER" not in sent
    assert "Second ask, again." in sent
    assert "alpha = 1" in sent


def test_a_checkpoint_the_rewind_went_over_is_no_longer_in_force(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("Survey the modules.")
    engine = make_engine(ledger, builder.session_id)
    builder.turn("Listing a.", [("Bash", {"command": "ls a"}, listing("a", 40), 0)])
    kept = ledger.entries(builder.session_id)[-1].seq
    for tag in "bcdefgh":
        builder.turn(f"Listing {tag}.", [("Bash", {"command": f"ls {tag}"}, listing(tag, 200), 0)])
        engine.prepare()
    # The listings overflow the 16k window: pressure has derived a checkpoint by now.
    assert engine.state().checkpoint is not None

    _rewind(ledger, builder.session_id, kept)
    builder.user("Only a, please.")
    sent = _same_as_a_new_engine(ledger, builder.session_id, engine)
    assert engine.state().checkpoint is None
    assert "[checkpoint" not in sent
    assert "src/a/module_39.py" in sent
    assert "src/b/" not in sent
