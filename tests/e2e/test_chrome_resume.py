"""The governed Chrome task across a SIGKILL: real processes, Chromium, recovery by observation.

`python -m comal --plugin chrome` runs against the fake server as its own process; a loopback
gate holds the page (not ready, or its main thread blocked) so the test can kill Comal while a
ChromePublish or a ChromeRecover is in flight. The resumed process settles the orphan from a
fresh observation before its first model call, never deploying or opening again.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from perf.crash_harness import (
    FakeServerProcess,
    ServedWorkspace,
    make_workspace,
)

from comal.ledger import Entry
from tests.e2e.chrome_support import (
    Gate,
    by_call,
    cdp_tabs,
    deploys,
    gated_html,
    live_pids,
    make_site,
    stop_all,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium"),
]

READY = "window.__ready === true"
BROWSER_CHECKS = [{"selector": "h1", "text": "Hello"}, {"title": "Gated site"}]


def call(call_id: str, name: str, arguments: dict[str, Any], **extra: object) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}], **extra}


@dataclass(kw_only=True)
class Task(ServedWorkspace):
    gate: Gate
    flags: tuple[str, ...] = ("--plugin", "chrome")
    wait_s: float = 60.0


@pytest.fixture
def make_task(tmp_path: Path) -> Iterator[Callable[[list[Any]], Task]]:
    made: list[Task] = []

    def make(turns: list[Any]) -> Task:
        gate = Gate()
        server = FakeServerProcess(tmp_path / "server", turns)
        workspace, home = make_workspace(tmp_path, server.base_url, ["test -f site/index.html"])
        make_site(workspace, gated_html(gate.port))
        task = Task(server, workspace, home, gate=gate)
        made.append(task)
        return task

    yield make
    for task in made:
        task.server.stop()
        task.gate.stop()
        stop_all(task.home)


def intent_of(entries: list[Entry], call_id: str) -> dict[str, Any]:
    started = by_call(entries, "tool.started")[call_id]
    intent: dict[str, Any] = started["preparation"]["intent"]
    return intent


def tab_open(call_id: str) -> Callable[[list[Entry]], bool]:
    """The publish's intent is recorded and its governed tab is open in the browser."""

    def test(entries: list[Entry]) -> bool:
        if call_id not in by_call(entries, "tool.started"):
            return False
        intent = intent_of(entries, call_id)
        return intent["url"] in cdp_tabs(intent["cdp_port"])

    return test


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)


def killed_publishing(task: Task) -> tuple[str, list[Entry]]:
    """`-p publish the site`, SIGKILLed once the governed tab is open (before any result)."""
    proc = task.start("-p", "publish the site")
    task.wait_for(proc, tab_open("p1"))
    kill(proc)
    return task.session()


def resumed(task: Task, sid: str) -> list[Entry]:
    """`--resume SID -p` run to a clean end; the session's entries after it."""
    proc = task.start("--resume", sid, "-p")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, out.decode() + err.decode()
    return task.session()[1]


def test_killed_during_publish_resumes_reconciled_by_observation(make_task: Any) -> None:
    task = make_task(
        [
            call("p1", "ChromePublish", {"folder": "site", "ready": READY}),
            call("f1", "ChromeFinish", {"checks": BROWSER_CHECKS}),
            call("f2", "finish_call", {"answer": "published, reconciled, checked"}),
            "done",
        ]
    )
    sid, entries = killed_publishing(task)
    assert "p1" not in by_call(entries, "tool.result")  # killed mid-publish: an orphan
    assert len(deploys(task.home)) == 1
    task.gate.state = "open"

    entries = resumed(task, sid)

    results = by_call(entries, "tool.result")
    publish = results["p1"]
    assert publish["status"] == "postcondition_observed"
    assert publish["observed"]["postcondition_observed"] is True
    assert publish["observed"]["deploy_observed"] is True
    assert publish["observed"]["final_url"] == intent_of(entries, "p1")["url"]
    assert publish["media"][0]["media_type"] == "image/png"
    assert "never" not in publish["observed"]  # it does not claim the handler returned
    # Settled before any model call of the resumed process.
    kinds = [(e.kind, e.payload.get("call_id")) for e in entries]
    resumed_request = max(i for i, k in enumerate(kinds) if k[0] == "session.plugins")
    reconciled = kinds.index(("tool.result", "p1"))
    first_request = next(
        i for i, k in enumerate(kinds) if k[0] == "provider.request" and i > resumed_request
    )
    assert resumed_request < reconciled < first_request
    # Deploy and Open were not repeated: one server start, one ChromePublish start.
    assert len(deploys(task.home)) == 1
    assert sum(1 for k in kinds if k == ("tool.started", "p1")) == 1
    assert results["f1"]["observed"]["browser_checks_passed"] is True
    assert results["f2"]["is_error"] is False
    assert task.server.stats()["orphan_violations"] == 0
    assert live_pids(task.home) == []


def test_a_page_changed_behind_the_tasks_back_stays_blocked(make_task: Any) -> None:
    task = make_task(
        [
            call("p1", "ChromePublish", {"folder": "site", "ready": READY}),
            "The publication is blocked; I will not republish without permission.",
        ]
    )
    sid, _ = killed_publishing(task)
    page = task.workspace / "site" / "index.html"
    page.write_text(page.read_text().replace("Hello", "Changed"))
    task.gate.state = "open"

    entries = resumed(task, sid)

    publish = by_call(entries, "tool.result")["p1"]
    assert publish["status"] == "uncertain"
    assert publish["observed"]["blocked"] is True
    assert "index.html" in publish["observed"]["detail"]
    assert "served bytes to match the intent" in publish["observed"]["needs"]
    assert (
        publish["observed"]["served"]["index.html"]
        != intent_of(entries, "p1")["files"]["index.html"]
    )
    assert len(deploys(task.home)) == 1


def test_killed_during_recover_repeats_only_the_known_reads(make_task: Any) -> None:
    reads = ["dom_text", "console_errors"]
    task = make_task(
        [
            call("p1", "ChromePublish", {"folder": "site", "ready": READY}),
            call("r1", "ChromeRecover", {"reads": reads}, delay_s=0.5),
            call("f1", "ChromeFinish", {"checks": BROWSER_CHECKS}),
            call("f2", "finish_call", {"answer": "done"}),
            "done",
        ]
    )
    task.gate.state = "open"
    proc = task.start("-p", "publish and look")
    task.wait_for(proc, lambda entries: "p1" in by_call(entries, "tool.result"))
    task.gate.state = "hold"  # the page's main thread now blocks every read
    task.wait_for(proc, lambda entries: "r1" in by_call(entries, "tool.started"))
    time.sleep(0.5)
    kill(proc)
    sid, entries = task.session()
    assert "r1" not in by_call(entries, "tool.result")
    task.gate.state = "open"

    entries = resumed(task, sid)

    recovered = by_call(entries, "tool.result")["r1"]
    assert recovered["status"] == "repeated"
    assert recovered["observed"]["repeated_reads"] == reads
    assert "Hello from the gated site" in recovered["observed"]["dom_text"]
    assert "screenshot_digest" not in recovered["observed"]  # no read it did not declare
    assert "title" not in recovered["observed"]
    assert len(deploys(task.home)) == 1
    assert by_call(entries, "tool.result")["f2"]["is_error"] is False


def test_the_new_processs_permissions_apply_to_the_observation(make_task: Any) -> None:
    task = make_task(
        [
            call("p1", "ChromePublish", {"folder": "site", "ready": READY}),
            "Observation is not allowed here; leaving the publication as it is.",
        ]
    )
    sid, _ = killed_publishing(task)
    task.gate.state = "open"
    config = task.workspace / ".comal" / "config.toml"
    config.write_text(config.read_text() + '\n[permissions]\ndeny = [{ tool = "ChromeRecover" }]\n')

    entries = resumed(task, sid)

    publish = by_call(entries, "tool.result")["p1"]
    assert publish["status"] == "uncertain"
    assert "permissions do not allow observing" in publish["observed"]["detail"]
    assert len(deploys(task.home)) == 1
