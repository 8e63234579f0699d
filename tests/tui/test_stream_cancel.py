"""Esc while a real HTTP provider streams: the TUI talks openai-chat to the loopback fake server
through the provider the command line builds, the answer stalls after its first words, and
Esc must close the stream's connection, leave nothing of the partial answer recorded, and let
the next prompt in the same app get a normal answer."""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from comal.agent.core.toolset import standard_tools
from comal.cli.cmd_run import build_provider
from comal.config import load_config
from comal.ledger.store import Ledger
from comal.providers.base import Provider
from comal.session import open_calls
from comal.testing.fake_server import FakeServer
from comal.tui.app import ComalApp, SessionStart
from comal.tui.widgets.transcript import AssistantItem, NoticeItem
from tests.tui.conftest import send, session_id, settle, until

pytestmark = pytest.mark.tui

HEAD = "The first words arrive, "
"""What the stalled answer streams before its silence (`chunk_chars` 8: three text events)."""
STALLED: dict[str, Any] = {
    "text": HEAD + "and the rest would come a minute later.",
    "chunk_chars": 8,
    # Event 0 is the role chunk; events 1-3 carry HEAD; the stream then waits a minute.
    "stall_after_events": 4,
    "stall_s": 60,
}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer([STALLED, "Back again."]) as fake:
        yield fake


@pytest_asyncio.fixture
async def provider(server: FakeServer, workspace: Path) -> AsyncIterator[Provider]:
    """The provider exactly as `comal` builds it: config file → `build_provider`."""
    (workspace / ".comal").mkdir()
    (workspace / ".comal" / "config.toml").write_text(
        'default_provider = "fake"\n\n[providers.fake]\nwire = "openai-chat"\n'
        f'base_url = "{server.openai_base_url}"\nmodel = "fake-model"\n'
    )
    config = load_config(cwd=workspace)
    args = argparse.Namespace(provider=None, model=None)
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(600.0, connect=10.0)) as client:
        yield await build_provider(config, args, client)


def shown(app: ComalApp) -> str:
    return "".join(a.text for a in app.query(AssistantItem))


async def test_escape_mid_stream_closes_the_connection_and_records_no_partial_answer(
    server: FakeServer, provider: Provider, ledger: Ledger, workspace: Path
) -> None:
    config = load_config(cwd=workspace)
    assert provider.wire == "openai-chat"
    app = ComalApp(SessionStart(ledger, config, provider, standard_tools()))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, app, "tell me a long story")
        await until(pilot, lambda: shown(app) == HEAD)
        sid = session_id(app)
        assert ledger.session(sid).status == "active"
        assert server.stats().abandoned_streams == 0
        pressed = time.monotonic()
        await pilot.press("escape")
        await settle(pilot, app, timeout_s=10)
        await until(pilot, lambda: server.stats().abandoned_streams == 1, timeout_s=10)
        # The stream would have stalled for a minute: the turn and its connection ended at Esc.
        after_esc_s = time.monotonic() - pressed
        notices = [n.text for n in app.query(NoticeItem)]
        partial = [(a.text, a.done, a.has_class("discarded")) for a in app.query(AssistantItem)]
        status_after_cancel = ledger.session(sid).status
        verified_after_cancel = ledger.verify(sid).ok
        kinds_after_cancel = [e.kind for e in ledger.entries(sid)]

        await send(pilot, app, "carry on")
        await settle(pilot, app)
        answers = [(a.text, a.done) for a in app.query(AssistantItem)]
    stats = server.stats()
    assert after_esc_s < 10
    assert any(f"turn cancelled · session {sid} is resumable" in n for n in notices)
    assert partial == [(HEAD, True, True)]
    assert status_after_cancel == "interrupted"
    assert verified_after_cancel
    # The interrupted stream leaves its request and nothing else: no reply, no discarded one.
    tail = kinds_after_cancel[kinds_after_cancel.index("message.user") :]
    assert tail == ["message.user", "provider.request"]

    assert answers == [(HEAD, True), ("Back again.", True)]
    assert (stats.requests, stats.served, stats.abandoned_streams) == (2, 2, 1)
    assert (stats.orphan_violations, stats.unexpected_requests) == (0, 0)
    replies = ledger.entries(sid, kinds=("message.assistant", "response.discarded"))
    assert [(e.kind, e.payload["message"]) for e in replies] == [
        (
            "message.assistant",
            {"role": "assistant", "parts": [{"type": "text", "text": "Back again."}]},
        )
    ]
    # What the model is sent next holds both user messages (the wire joins adjacent ones) and
    # nothing of the partial answer.
    second = server.received[1].body["messages"]
    assert isinstance(second, list)
    assert [(m["role"], m["content"]) for m in second if isinstance(m, dict)][1:] == [
        (
            "user",
            [
                {"type": "text", "text": "tell me a long story"},
                {"type": "text", "text": "carry on"},
            ],
        )
    ]
    assert HEAD.strip() not in str(server.received[1].body)
    assert ledger.session(sid).status == "active"
    assert open_calls(ledger.entries(sid)) == ()
    assert ledger.verify(sid).ok
