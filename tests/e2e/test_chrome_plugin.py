"""The governed Chrome task in one process: real headless Chromium against a loopback site.

The model side is the loopback fake server; the browser is Debian's chromium driven by the
Chrome plugin over CDP. Publish, recover and finish, then finish_call — which refuses to close
a session that published until ChromeFinish passed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from comal.agent.headless import Outcome, run_headless
from comal.agent.plugins import load_plugins
from comal.agent.session import SessionOptions
from comal.agent.toolset import standard_tools
from comal.config import Config, ProviderConfig
from comal.ledger.store import Ledger
from comal.providers.factory import make_provider
from comal.testing.fake_server import FakeServer
from tests.e2e.chrome_support import (
    by_call,
    chrome_config,
    deploys,
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
    assert results["c4"]["observed"]["browser_checks_passed"] is True
    assert results["c5"]["is_error"] is False
    assert outcome.status == "finished"
    assert len(deploys(tmp_path / "home")) == 1
    assert live_pids(tmp_path / "home") == []  # ChromeFinish closed browser and server
    assert server.stats().unexpected_requests == 0
