"""Session locks between real processes: live holders refused, dead ones reclaimed."""

from __future__ import annotations

import multiprocessing
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from comal.errors import SessionLockedError
from comal.ledger import Ledger
from comal.ledger.engine import is_pg_url
from tests.pg_support import ledger_target as engine_target

CHILD = Path(__file__).with_name("ledger_child.py")


@contextmanager
def _child(mode: str, path: str | Path, session_id: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), mode, str(path), session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.split() == ["held", str(proc.pid)], line
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _session(path: str | Path) -> str:
    with Ledger.open(path) as ledger:
        return ledger.create_session(cwd="/w")


def test_a_live_holder_refuses_a_second_process(ledger_target: str) -> None:
    sid = _session(ledger_target)
    with _child("hold", ledger_target, sid) as holder, Ledger.open(ledger_target) as ledger:
        with pytest.raises(SessionLockedError) as refused:
            ledger.acquire_lock(sid)
        assert f"pid {holder.pid} on {socket.gethostname()}" in refused.value.message
        current = ledger.lock_holder(sid)
        assert current is not None
        assert (current.pid, current.host) == (holder.pid, socket.gethostname())
        assert current.process_start_id

        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
        assert ledger.lock_holder(sid) is None
        mine = ledger.acquire_lock(sid)
        assert mine.pid == os.getpid()
        kinds = [e.kind for e in ledger.entries(sid)]
        assert kinds == ["lock.acquired", "lock.acquired"]


def test_a_dead_holder_is_reclaimed_with_an_entry(ledger_target: str) -> None:
    sid = _session(ledger_target)
    with _child("grab", ledger_target, sid) as dead:
        assert dead.wait(timeout=30) == 0
    with Ledger.open(ledger_target) as ledger:
        assert ledger.lock_holder(sid) is None
        mine = ledger.acquire_lock(sid)
        assert ledger.lock_holder(sid) == mine
        acquired, reclaimed = ledger.entries(sid)
    assert acquired.kind == "lock.acquired"
    assert acquired.payload["pid"] == dead.pid
    assert reclaimed.kind == "lock.reclaimed"
    assert reclaimed.payload["pid"] == os.getpid()
    assert reclaimed.payload["host"] == socket.gethostname()
    previous = reclaimed.payload["previous"]
    assert isinstance(previous, dict)
    assert previous["pid"] == dead.pid
    assert previous["process_start_id"] == acquired.payload["process_start_id"]


def test_a_recycled_pid_is_not_mistaken_for_the_holder(ledger_path: Path) -> None:
    sid = _session(ledger_path)
    # A lock left by an earlier process that had this very pid: same pid, other start.
    conn = sqlite3.connect(ledger_path, isolation_level=None)
    conn.execute(
        "INSERT INTO locks (session_id, pid, host, process_start_id, process_started_at,"
        " acquired_at) VALUES (?, ?, ?, ?, ?, ?)",
        (sid, os.getpid(), socket.gethostname(), "other-boot:12345", 1, 1),
    )
    conn.close()
    with Ledger.open(ledger_path) as ledger:
        assert ledger.lock_holder(sid) is None
        mine = ledger.acquire_lock(sid)
        assert mine.process_start_id != "other-boot:12345"
        (entry,) = ledger.entries(sid)
    assert entry.kind == "lock.reclaimed"
    previous = entry.payload["previous"]
    assert isinstance(previous, dict)
    assert previous["process_start_id"] == "other-boot:12345"


def test_the_same_process_may_reacquire_and_close_releases(ledger_target: str) -> None:
    sid = _session(ledger_target)
    with Ledger.open(ledger_target) as ledger:
        first = ledger.acquire_lock(sid)
        assert ledger.acquire_lock(sid) == first
        with Ledger.open(ledger_target) as second_handle:
            assert second_handle.acquire_lock(sid) == first
        assert [e.kind for e in ledger.entries(sid)] == ["lock.acquired"]
    with Ledger.open(ledger_target) as ledger:
        assert ledger.lock_holder(sid) is None


def test_release_lock_leaves_another_holders_lock(ledger_target: str) -> None:
    sid = _session(ledger_target)
    with _child("hold", ledger_target, sid) as holder, Ledger.open(ledger_target) as ledger:
        ledger.release_lock(sid)
        current = ledger.lock_holder(sid)
        assert current is not None
        assert current.pid == holder.pid


def _open_when_released(path: str, barrier: Any) -> str:
    barrier.wait()
    try:
        with Ledger.open(path):
            return "ok"
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which asserts on it
        return f"{type(exc).__name__}: {exc}"


def test_processes_opening_a_new_ledger_together_all_open_it(
    ledger_target: str, tmp_path: Path
) -> None:
    # Several `comal` processes starting at once on a fresh ledger (a parent and its first
    # children, or two terminals): each waits out the others' switch to WAL and migration.
    engine = "postgresql" if is_pg_url(ledger_target) else "sqlite"
    context = multiprocessing.get_context("spawn")
    outcomes: list[str] = []
    with context.Manager() as manager, context.Pool(4) as pool:
        for n in range(6):
            with engine_target(engine, tmp_path, f"ledger{n}.db") as target:
                barrier = manager.Barrier(4)
                outcomes += pool.starmap(_open_when_released, [(target, barrier)] * 4)
                with Ledger.open(target) as ledger:
                    assert ledger.verify().ok
    assert outcomes == ["ok"] * 24
