"""The governed Chrome task in one process: real headless Chromium against a loopback site.

The model side is the loopback fake server; the browser is Debian's chromium driven by the
Chrome plugin over CDP. Publish, recover and finish, then finish_call — which refuses to close
a session that published until ChromeFinish passed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx2
import pytest

from comal.agent.core.plugins import load_plugins
from comal.agent.core.session import SessionOptions
from comal.agent.core.toolset import standard_tools
from comal.agent.turns import Outcome, run_headless
from comal.config import Config, ProviderConfig
from comal.ledger.store import Ledger
from comal.providers.factory import make_provider
from comal.testing.fake_server import FakeServer
from comal.testing.loopback import LoopbackService
from tests.e2e.chrome_support import (
    Gate,
    by_call,
    chrome_config,
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


def call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    make_site(ws)
    yield ws
    stop_all(tmp_path / "home")


async def run(config: Config, turns: list[Any], ledger: Ledger) -> tuple[Outcome, FakeServer]:
    with FakeServer(turns) as server:
        cfg = ProviderConfig("fake", "openai-chat", server.openai_base_url, model="fake-model")
        async with httpx2.AsyncClient() as client:
            provider = make_provider(cfg, client=client, api_key="k", context_window_override=None)
            options = SessionOptions(plugins=load_plugins(config))
            outcome = await run_headless(
                ledger, config, provider, standard_tools(), options, prompt="publish the site"
            )
        return outcome, server


async def test_publish_recover_and_finish(tmp_path: Path, workspace: Path) -> None:
    config = chrome_config(tmp_path, workspace)
    turns: list[Any] = [
        call("c1", "ChromePublish", folder="site"),
        call(
            "c2", "ChromeRecover", reads=["title", "dom_text", "console_errors", "failed_requests"]
        ),
        call("c3", "finish_call", answer="too early"),
        call("c3b", "ChromeFinish", checks=[{"selector": "h1", "text": "Goodbye"}]),
        call(
            "c4",
            "ChromeFinish",
            checks=[{"selector": "h1", "text": "Hello"}, {"title": "Comal site"}],
        ),
        call("c5", "finish_call", answer="published and checked"),
        "done",
    ]
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        outcome, server = await run(config, turns, ledger)
        entries = ledger.entries(outcome.session_id)
    results = by_call(entries, "tool.result")
    started = by_call(entries, "tool.started")
    # The intent was recorded before acting: digests, target and the governed URL.
    intent = started["c1"]["preparation"]["intent"]
    assert intent["target"] == "loopback"
    assert set(intent["files"]) == {"index.html", "style.css"}
    assert intent["url"].startswith("http://127.0.0.1:")
    publish = results["c1"]
    assert publish["status"] == "ok", publish
    assert publish["observed"]["final_url"] == intent["url"]
    assert publish["observed"]["title"] == "Comal site"
    assert publish["observed"]["deployed"] is True
    assert publish["media"][0]["media_type"] == "image/png"
    assert publish["media"][0]["size_bytes"] > 1000
    recover = results["c2"]["observed"]
    assert "Hello from the site" in recover["dom_text"]
    assert any("first error" in e for e in recover["console_errors"])
    assert any(r["url"].endswith("missing.png") for r in recover["failed_requests"])
    # finish_call before ChromeFinish: refused, the session stays open.
    assert results["c3"]["is_error"] is True
    # A failing browser check keeps the task open (the tab stays for the next try).
    assert results["c3b"]["is_error"] is True
    assert results["c3b"]["observed"]["browser_checks_passed"] is False
    assert results["c4"]["observed"]["browser_checks_passed"] is True
    assert results["c5"]["is_error"] is False
    assert outcome.status == "finished"
    assert len(deploys(tmp_path / "home")) == 1
    assert live_pids(tmp_path / "home") == []  # ChromeFinish closed browser and server
    assert server.stats().unexpected_requests == 0


class UploadServer(LoopbackService):
    """A "remote" host played on loopback: files are uploaded, then a receipt is returned."""

    def __init__(self, with_identity: bool) -> None:
        files: dict[str, bytes] = {}
        self.files = files
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.startswith("/upload/"):
                    files[self.path.removeprefix("/upload/")] = body
                    answer = b"{}"
                else:
                    receipt: dict[str, object] = {
                        "url": f"http://127.0.0.1:{owner.port}/index.html",
                        "files": {
                            k: "sha256:" + hashlib.sha256(v).hexdigest() for k, v in files.items()
                        },
                    }
                    if with_identity:
                        receipt["identity"] = "deploy-0001"
                    answer = json.dumps(receipt).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def do_GET(self) -> None:
                data = files.get(self.path.lstrip("/"))
                self.send_response(200 if data is not None else 404)
                self.send_header("Content-Length", str(len(data or b"")))
                self.end_headers()
                self.wfile.write(data or b"")

            def log_message(self, format: str, *args: object) -> None:
                return None

        super().__init__(Handler)
        self.start()


PUBLISH_SCRIPT = """
import os, sys, urllib.request
from pathlib import Path
base = sys.argv[1]
root = Path(os.environ["COMAL_PUBLISH_DIR"])
for path in sorted(root.rglob("*")):
    if path.is_file():
        rel = path.relative_to(root).as_posix()
        urllib.request.urlopen(urllib.request.Request(f"{base}/upload/{rel}", path.read_bytes()))
print(urllib.request.urlopen(urllib.request.Request(f"{base}/commit", b"{}")).read().decode())
"""


@pytest.mark.parametrize("with_identity", [False, True])
async def test_a_remote_publication_needs_a_complete_receipt(
    tmp_path: Path, workspace: Path, with_identity: bool
) -> None:
    remote = UploadServer(with_identity)
    (workspace / "publish.py").write_text(PUBLISH_SCRIPT)
    command = [sys.executable, "publish.py", f"http://127.0.0.1:{remote.port}"]
    config = chrome_config(tmp_path, workspace, remote={"command": command})
    turns: list[Any] = [call("c1", "ChromePublish", folder="site", target="remote"), "reported"]
    try:
        with Ledger.open(tmp_path / "ledger.db") as ledger:
            outcome, _ = await run(config, turns, ledger)
            results = by_call(ledger.entries(outcome.session_id), "tool.result")
    finally:
        remote.stop()
    publish = results["c1"]
    assert set(remote.files) == {"index.html", "style.css"}  # the upload itself happened
    if with_identity:
        assert publish["status"] == "ok", publish
        assert publish["observed"]["receipt"]["identity"] == "deploy-0001"
        assert publish["observed"]["title"] == "Comal site"
    else:
        assert publish["is_error"] is True
        assert publish["observed"]["blocked"] is True
        assert publish["observed"]["needs"] == ["a deployment identity"]
        assert "media" not in publish  # nothing was opened


async def test_an_interrupted_click_stays_uncertain_and_is_never_replayed(
    tmp_path: Path, workspace: Path
) -> None:
    gate = Gate()
    make_site(workspace, gated_html(gate.port))
    gate.state = "open"
    config = chrome_config(tmp_path, workspace)
    turns: list[Any] = [
        call("p1", "ChromePublish", folder="site", ready="window.__ready === true"),
        call("a1", "ChromeAct", action="click", selector="h1"),
        call("a2", "ChromeAct", action="click", selector="h1"),  # insisting after the resume
        "I will check the page instead.",
    ]
    try:
        with FakeServer(turns) as server, Ledger.open(tmp_path / "ledger.db") as ledger:
            cfg = ProviderConfig("fake", "openai-chat", server.openai_base_url, model="fake-model")
            async with httpx2.AsyncClient() as client:
                provider = make_provider(
                    cfg, client=client, api_key="k", context_window_override=None
                )
                options = SessionOptions(plugins=load_plugins(config))
                task = asyncio.create_task(
                    run_headless(
                        ledger, config, provider, standard_tools(), options, prompt="click"
                    )
                )
                while True:  # hold the page once the click has started, then stop the run
                    sid = ledger.latest_session(str(workspace))
                    started = by_call(ledger.entries(sid), "tool.started") if sid else {}
                    if "a1" in started:
                        break
                    gate.state = (
                        ("hold" if "p1" in by_call(ledger.entries(sid), "tool.result") else "open")
                        if sid
                        else "open"
                    )
                    await asyncio.sleep(0.02)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert sid is not None
                # Cancelled mid-click: the click may have happened, so it is uncertain.
                assert by_call(ledger.entries(sid), "tool.result")["a1"]["status"] == "uncertain"
                ledger.release_lock(sid)
                gate.state = "open"
                options = SessionOptions(plugins=load_plugins(config))
                outcome = await run_headless(
                    ledger, config, provider, standard_tools(), options, prompt=None, session_id=sid
                )
            entries = ledger.entries(sid)
            bodies = {
                str(e.payload["call_id"]): (ledger.body(e) or b"").decode()
                for e in entries
                if e.kind == "tool.result"
            }
    finally:
        gate.stop()
    results = [e.payload for e in entries if e.kind == "tool.result"]
    statuses = [(r["name"], r["status"]) for r in results]
    assert statuses == [
        ("ChromePublish", "ok"),
        ("ChromeAct", "uncertain"),
        ("ChromeAct", "denied"),  # the identical click is refused, not replayed
    ]
    assert "It is not run again" in bodies["a1"]
    assert (
        sum(1 for e in entries if e.kind == "tool.started" and e.payload["name"] == "ChromeAct")
        == 2
    )
    assert outcome.answer == "I will check the page instead.", outcome
