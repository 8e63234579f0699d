"""Watching a fleet: `comal sessions --host/--status/--since` filter, and `--follow` prints the
sessions of every host as they change (LISTEN/NOTIFY on PostgreSQL, polling on SQLite)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from comal.ledger import Ledger
from comal.ledger.engine import is_pg_url
from comal.testing.sessions import SessionBuilder


def _env(target: str) -> dict[str, str]:
    url = target if is_pg_url(target) else f"sqlite:{target}"
    return {**os.environ, "COMAL_LEDGER_URL": url}


def _session_on(target: str, host: str, monkeypatch: pytest.MonkeyPatch, ask: str) -> str:
    monkeypatch.setenv("COMAL_HOST_ID", host)
    with Ledger.open(target) as ledger:
        builder = SessionBuilder(ledger)
        ledger.acquire_lock(builder.session_id)
        builder.user(ask)
        builder.answer("done")
        return builder.session_id


def _listed(target: str, *flags: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "comal", "sessions", "--json", *flags],
        env=_env(target),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return [row["id"] for row in json.loads(done.stdout)]


def test_sessions_are_filtered_by_host_status_and_time(
    ledger_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_a = _session_on(ledger_target, "host-a", monkeypatch, "first")
    on_b = _session_on(ledger_target, "host-b", monkeypatch, "second")
    with Ledger.open(ledger_target) as ledger:
        ledger.append(on_b, "session.finished", {"answer": "done", "checks": []})
    assert _listed(ledger_target, "--host", "host-a") == [on_a]
    assert _listed(ledger_target, "--host", "host-b") == [on_b]
    assert _listed(ledger_target, "--host", "host-c") == []
    assert _listed(ledger_target, "--status", "finished") == [on_b]
    assert _listed(ledger_target, "--status", "answered") == [on_a]
    assert _listed(ledger_target, "--status", "active") == [on_a]  # the indexed name
    assert _listed(ledger_target, "--status", "running") == []
    assert set(_listed(ledger_target, "--since", "10m")) == {on_a, on_b}
    assert _listed(ledger_target, "--since", "2000-01-01", "--host", "host-a") == [on_a]
    assert _listed(ledger_target, "--since", "2999-01-01") == []
    bad = subprocess.run(
        [sys.executable, "-m", "comal", "sessions", "--since", "yesterday"],
        env=_env(ledger_target),
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert "--since takes a duration (30m, 2h, 1d) or an ISO date" in bad.stderr


class _Lines:
    """Lines of a process's stdout, read with a deadline (never blocking past it)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self._fd = proc.stdout.fileno()
        self._pending = b""

    def until(self, *needles: str, seconds: float = 60) -> str:
        """The next line holding every one of `needles`."""
        needle = " and ".join(repr(n) for n in needles)
        deadline = time.monotonic() + seconds
        while True:
            while b"\n" in self._pending:
                line, self._pending = self._pending.split(b"\n", 1)
                if all(n in line.decode() for n in needles):
                    return line.decode()
            left = deadline - time.monotonic()
            assert left > 0, f"no line with {needle!r}"
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready:
                chunk = os.read(self._fd, 65536)
                assert chunk, f"the follower ended before a line with {needle!r}"
                self._pending += chunk


def test_follow_shows_sessions_of_every_host_as_they_change(
    ledger_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _session_on(ledger_target, "host-a", monkeypatch, "first")
    proc = subprocess.Popen(
        [sys.executable, "-m", "comal", "sessions", "--follow"],
        env=_env(ledger_target),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        lines = _Lines(proc)
        with Ledger.open(ledger_target) as ledger:
            short = ledger.short_id(first)
        shown = lines.until(short)
        assert " now " in shown
        assert " answered " in shown  # as `comal sessions` says it, not the indexed `active`
        assert "host host-a" in shown
        second = _session_on(ledger_target, "host-b", monkeypatch, "second")
        with Ledger.open(ledger_target) as ledger:
            short_b = ledger.short_id(second)
        first_b = lines.until(short_b)
        assert " new " in first_b
        if "host host-b" not in first_b:  # seen as it started, before its lock was taken
            lines.until(short_b, "host host-b")
        with Ledger.open(ledger_target) as ledger:
            ledger.append(first, "session.finished", {"answer": "done", "checks": []})
        shown = lines.until(f"status   {short}")
        assert " finished " in shown
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
            if proc.stdout is not None:
                proc.stdout.close()
