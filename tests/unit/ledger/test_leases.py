"""Session locks as leases across hosts (simulated by `COMAL_HOST_ID`): a holder elsewhere is
judged by its lease, renewed by its heartbeat; an expired lease is reclaimed and the reclaim
recorded; a holder whose lease was taken over can no longer write; contenders never both hold.

Waits poll the ledger until a state is reached (bounded), never assert on durations.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from comal.errors import SessionLockedError
from comal.ledger import Ledger

CHILD = Path(__file__).with_name("ledger_child.py")
LEASE_S = "1.5"


@pytest.fixture(autouse=True)
def host_a(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMAL_HOST_ID", "host-a")
    monkeypatch.setenv("COMAL_LEASE_S", LEASE_S)


@contextmanager
def _on_host(host: str, mode: str, target: str, sid: str) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "COMAL_HOST_ID": host, "COMAL_LEASE_S": LEASE_S}
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), mode, target, sid],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def _until_free(ledger: Ledger, sid: str) -> None:
    deadline = time.monotonic() + 60
    while ledger.lock_holder(sid) is not None:
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.1)


def test_a_holder_on_another_host_is_judged_by_its_lease(ledger_target: str) -> None:
    with Ledger.open(ledger_target) as ledger:
        sid = ledger.create_session(cwd="/w")
        with _on_host("host-b", "hold", ledger_target, sid) as holder:
            assert _line(holder) == f"held {holder.pid}"
            # Its heartbeat keeps the lease: still held after several lease lengths.
            for _ in range(3):
                time.sleep(float(LEASE_S))
                with pytest.raises(SessionLockedError, match="host host-b, lease renewed until"):
                    ledger.acquire_lock(sid)
            holder.kill()  # the host goes away: no heartbeat, and no pid this host could check
            holder.wait(timeout=30)
            _until_free(ledger, sid)
            mine = ledger.acquire_lock(sid)
        acquired, reclaimed = ledger.entries(sid)
    assert (mine.host_id, mine.pid) == ("host-a", os.getpid())
    assert acquired.kind == "lock.acquired"
    assert (acquired.payload["pid"], acquired.payload["host_id"]) == (holder.pid, "host-b")
    assert reclaimed.kind == "lock.reclaimed"
    assert reclaimed.payload["reason"] == "lease_expired"
    assert reclaimed.payload["host_id"] == "host-a"
    previous = reclaimed.payload["previous"]
    assert isinstance(previous, dict)
    assert (previous["pid"], previous["host_id"]) == (holder.pid, "host-b")
    assert isinstance(previous["expires_at"], int)


def test_a_holder_whose_lease_was_taken_over_can_no_longer_write(ledger_target: str) -> None:
    with Ledger.open(ledger_target) as ledger:
        sid = ledger.create_session(cwd="/w")
        with _on_host("host-b", "write", ledger_target, sid) as writer:
            assert writer.stdin is not None
            assert _line(writer) == f"held {writer.pid}"
            writer.stdin.write("before\n")
            writer.stdin.flush()
            assert _line(writer).startswith("ok ")
            os.kill(writer.pid, signal.SIGSTOP)  # alive, but silent: a partitioned host
            _until_free(ledger, sid)
            ledger.acquire_lock(sid)
            os.kill(writer.pid, signal.SIGCONT)
            writer.stdin.write("after\n")
            writer.stdin.flush()
            assert _line(writer) == "refused"
            ledger.append(sid, "message.user", {"text": "the new holder's"})
        texts = [e.payload.get("text") for e in ledger.entries(sid)]
        kinds = [e.kind for e in ledger.entries(sid)]
    assert texts == [None, "before", None, "the new holder's"]
    assert kinds == ["lock.acquired", "message.user", "lock.reclaimed", "message.user"]


def test_contenders_on_four_hosts_never_both_hold_one_session(ledger_target: str) -> None:
    with Ledger.open(ledger_target) as ledger:
        sid = ledger.create_session(cwd="/w")
    procs = [
        subprocess.Popen(
            [sys.executable, str(CHILD), "try", ledger_target, sid],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "COMAL_HOST_ID": f"host-{n}", "COMAL_LEASE_S": "30"},
        )
        for n in range(4)
    ]
    try:
        answers = [_line(proc) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
    winners = [proc.pid for proc, answer in zip(procs, answers, strict=True) if answer != "refused"]
    assert len(winners) == 1, answers
    assert answers.count("refused") == 3
    with Ledger.open(ledger_target) as ledger:
        (acquired,) = ledger.entries(sid)
    assert (acquired.kind, acquired.payload["pid"]) == ("lock.acquired", winners[0])
