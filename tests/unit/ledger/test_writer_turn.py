"""The writers' turn of an SQLite ledger: first come, woken at once, bounded, always given back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from comal.errors import LedgerError
from comal.ledger import Ledger
from comal.ledger.writer_turn import WriterTurn


def test_a_waiting_writer_gets_the_turn_when_the_holder_gives_it(tmp_path: Path) -> None:
    first, second = WriterTurn(tmp_path / "l.db"), WriterTurn(tmp_path / "l.db")
    assert first.take()
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(second.take(wait_s=30)))
    waiter.start()
    time.sleep(0.2)
    assert got == []  # still waiting while the first holds it
    first.give()
    waiter.join(timeout=10)
    assert got == [True]
    assert not first.take(wait_s=0.1)  # now the second holds it
    second.give()
    assert first.take(wait_s=0)
    first.close()
    second.close()


def test_a_wait_given_up_lets_go_of_the_turn_it_gets_later(tmp_path: Path) -> None:
    first, second, third = (WriterTurn(tmp_path / "l.db") for _ in range(3))
    assert first.take()
    assert not second.take(wait_s=0.1)  # gave up: goes on without the turn
    first.give()
    # The abandoned wait got the turn when the first gave it, and let go of it at once.
    deadline = time.monotonic() + 10
    while not third.take(wait_s=0.05):
        assert time.monotonic() < deadline, "the abandoned wait kept the turn"
    third.give()
    for turn in (first, second, third):
        turn.close()


def test_no_turn_where_its_file_cannot_be_made(tmp_path: Path) -> None:
    turn = WriterTurn(tmp_path / "missing" / "l.db")
    assert not turn.take()
    turn.give()  # nothing held: nothing to give
    turn.close()


def test_the_ledger_gives_the_turn_back_after_a_failed_write(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    other = WriterTurn(path)
    with Ledger.open(path) as ledger:
        sid = ledger.create_session(cwd="/w")
        assert other.take(wait_s=0)  # the ledger took and gave it for the session's row
        other.give()
        with pytest.raises(LedgerError):
            ledger.append("no-such-session", "message.user", {"text": "x"})
        assert other.take(wait_s=0)
        other.give()
        ledger.append(sid, "message.user", {"text": "y"})
        assert other.take(wait_s=0)
        other.give()
    other.close()
