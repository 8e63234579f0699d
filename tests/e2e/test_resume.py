"""`comal --resume UUID [-p [TEXT]]` and `--continue` end to end: real processes, SIGKILL, locks.

Every test runs `python -m comal` against a fake server running as its own process (so it
outlives a killed client and checks call/result pairing on every request it receives).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from perf.crash_harness import (
    COMAL,
    FakeServerProcess,
    ServedWorkspace,
    comal_env,
    make_workspace,
    start_comal,
    stream_events,
)

from comal.ledger import Entry, Ledger

pytestmark = pytest.mark.e2e

WRITE = {"path": "greeting.txt", "content": "hello\n"}
FINISH = {"answer": "greeting.txt says hello"}


@dataclass
class Run:
    code: int
    out: str
    err: str

    def events(self) -> list[dict[str, object]]:
        return stream_events(self.out.encode())


class Env(ServedWorkspace):
    def run(self, *args: str, timeout: float = 60) -> Run:
        proc = self.start(*args)
        out, err = proc.communicate(timeout=timeout)
        return Run(proc.returncode, out.decode(), err.decode())

    def orphans(self) -> int:
        return int(str(self.server.stats()["orphan_violations"]))


@pytest.fixture
def make_env(tmp_path: Path) -> Iterator[Callable[..., Env]]:
    servers: list[FakeServerProcess] = []

    def make(turns: list[object], checks: tuple[str, ...] = (), turn_by: str = "answered") -> Env:
        server = FakeServerProcess(tmp_path / "server", turns, turn_by=turn_by)
        servers.append(server)
        workspace, home = make_workspace(tmp_path, server.base_url, checks)
        return Env(server, workspace, home)

    yield make
    for server in servers:
        server.stop()


def _turn(turn_id: str, name: str, arguments: Mapping[str, object], **extra: object) -> object:
    return {"tool_calls": [{"id": turn_id, "name": name, "arguments": arguments}], **extra}


def _kinds(entries: list[Entry]) -> list[str]:
    return [e.kind for e in entries]


def _has(kind: str, **fields: object) -> Callable[[list[Entry]], bool]:
    def test(entries: list[Entry]) -> bool:
        return any(
            e.kind == kind and all(e.payload.get(k) == v for k, v in fields.items())
            for e in entries
        )

    return test


def test_killed_mid_stream_resumes_to_completion_and_reclaims_the_lock(
    make_env: Callable[..., Env],
) -> None:
    env = make_env(
        [
            # A pause mid-stream: a first request is recorded only once its reply starts
            # (sent on token bounds), and the kill must still find the reply unfinished.
            _turn(
                "c1", "Write", WRITE, delay_s=0.05, chunk_chars=2, stall_after_events=3, stall_s=4
            ),
            _turn("c2", "finish_call", FINISH),
        ],
        checks=("grep -qx hello greeting.txt",),
    )
    proc = env.start("-p", "write the greeting")
    env.wait_for(proc, _has("provider.request"))
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    sid, before = env.session()
    assert "message.assistant" not in _kinds(before)

    resumed = env.run("--resume", sid, "-p")

    assert resumed.code == 0, resumed.err
    _, entries = env.session()
    assert entries[: len(before)] == before  # nothing committed was lost or changed
    reclaimed = [e for e in entries if e.kind == "lock.reclaimed"]
    assert len(reclaimed) == 1
    previous = reclaimed[0].payload["previous"]
    assert isinstance(previous, dict)
    assert previous["pid"] == proc.pid
    assert (env.workspace / "greeting.txt").read_text() == "hello\n"
    assert _kinds(entries).count("message.user") == 1  # no new prompt was needed
    finished = [e for e in resumed.events() if e.get("type") == "finished"]
    assert finished
    assert finished[-1]["status"] == "finished"
    assert env.orphans() == 0


def test_a_live_holder_is_refused_by_pid_and_host(make_env: Callable[..., Env]) -> None:
    env = make_env([{"text": "slow answer", "stall_after_events": 1, "stall_s": 8}])
    proc = env.start("-p", "answer slowly")
    try:
        env.wait_for(proc, _has("provider.request"))
        sid, _ = env.session()

        refused = env.run("--resume", sid, "-p", "more")

        assert refused.code == 3
        assert f"pid {proc.pid}" in refused.err
        assert socket.gethostname() in refused.err
    finally:
        proc.kill()
        proc.communicate()
    _, entries = env.session()
    assert _kinds(entries).count("message.user") == 1  # the refused run wrote nothing


def test_an_uncertain_bash_is_not_rerun_and_its_reissue_is_refused(
    make_env: Callable[..., Env],
) -> None:
    append = {"command": "sleep 1; echo run >> log.txt"}
    env = make_env(
        [
            _turn("c1", "Bash", append),
            _turn("c2", "Bash", append),
            _turn("c3", "finish_call", FINISH),
        ]
    )
    proc = env.start("-p", "log a run")
    env.wait_for(proc, _has("tool.started", call_id="c1"))
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    sid, _ = env.session()

    resumed = env.run("--resume", sid, "-p")

    assert resumed.code == 0, resumed.err
    _, entries = env.session()
    results = {e.payload["call_id"]: e.payload for e in entries if e.kind == "tool.result"}
    assert results["c1"]["status"] == "uncertain"
    assert results["c2"]["status"] == "denied"
    started = next(e for e in entries if e.kind == "tool.started" and e.payload["call_id"] == "c2")
    permission = started.payload["permission"]
    assert isinstance(permission, dict)
    assert permission["mode"] == "uncertain-repeat"
    time.sleep(1.5)  # the killed call's own shell may still be finishing its sleep
    log = env.workspace / "log.txt"
    # Sandboxed (bwrap --die-with-parent), the killed call dies with Comal and never writes.
    runs = log.read_text().splitlines().count("run") if log.exists() else 0
    assert runs <= 1
    assert env.orphans() == 0


def test_a_finished_session_prints_its_answer_without_calling_the_model(
    make_env: Callable[..., Env],
) -> None:
    env = make_env([_turn("c1", "finish_call", FINISH)])
    first = env.run("-p", "finish")
    assert first.code == 0, first.err
    sid, _ = env.session()
    requests = int(str(env.server.stats()["requests"]))

    again = start_comal(env.workspace, env.home, "--resume", sid[:8], "-p")
    out, err = again.communicate(timeout=60)

    assert again.returncode == 0, err
    assert int(str(env.server.stats()["requests"])) == requests
    events = stream_events(out)
    assert any(
        e.get("type") == "text" and "greeting.txt says hello" in str(e["text"]) for e in events
    )
    assert any(e.get("type") == "notice" and e.get("code") == "STATE" for e in events)

    state = subprocess.run(
        [*COMAL, "state", sid, "--json"],
        cwd=env.workspace,
        env=comal_env(env.home),
        capture_output=True,
        check=True,
    )
    data = json.loads(state.stdout)
    assert data["status"] == "finished"
    assert data["final_answer"] == "greeting.txt says hello"
    assert data["pending_calls"] == []
    assert data["uncertain_calls"] == []


def test_continue_takes_the_latest_session_and_a_message_is_added(
    make_env: Callable[..., Env],
) -> None:
    env = make_env(["first answer", "second answer"], turn_by="order")
    first = env.run("-p", "first question")
    assert first.code == 0, first.err
    sid, _ = env.session()

    second = env.run("--continue", "-p", "second question")

    assert second.code == 0, second.err
    sid_after, entries = env.session()
    assert sid_after == sid
    users = [e for e in entries if e.kind == "message.user"]
    assert len(users) == 2
    assert any(
        e.get("type") == "finished" and e.get("answer") == "second answer" for e in second.events()
    )


def test_a_crash_between_finishing_and_the_status_update_is_repaired_by_a_plain_resume(
    make_env: Callable[..., Env],
) -> None:
    env = make_env([_turn("c1", "finish_call", FINISH)])
    assert env.run("-p", "finish").code == 0
    sid, _ = env.session()
    # The state a SIGKILL right after `session.finished` leaves: the entry, not the status.
    with Ledger.open(env.home / "ledger.db") as ledger:
        ledger.set_status(sid, "active")

    again = start_comal(env.workspace, env.home, "--resume", sid[:8], "-p")
    _, err = again.communicate(timeout=60)

    assert again.returncode == 0, err
    with Ledger.open(env.home / "ledger.db") as ledger:
        assert ledger.session(sid).status == "finished"
