"""Every body POSTed is named in the ledger: a server that answers only unstreamed (an empty
200 stream, as llama-cpp-python's `chatml-function-calling` gives with `tool_choice: auto`) is
probed and sent the request again, and both bodies are recorded beside the request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal_here as comal
from tests.e2e.headless_support import configure, ledger_at

pytestmark = pytest.mark.e2e


def test_the_probe_and_the_unstreamed_resend_are_recorded_as_posted(
    workspace: Path, home: Path
) -> None:
    empty = {"text": "never sent", "cut_after_events": 0}
    turns: list[Any] = [empty, "probe", "the answer", empty, "probe", "the second answer"]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "hello", "--output-format", "stream-json", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        sid = run.session_id()
        again = comal("--resume", sid, "-p", "and again", cwd=workspace, env_home=home)
        assert again.code == 0, again.stderr
        posted = [r.digest for r in server.received]
    assert "the answer" in run.stdout
    with ledger_at(home) as ledger:
        kinds = ("provider.request", "provider.resent", "message.assistant")
        entries = ledger.entries(sid, kinds=kinds)
    assert [e.kind for e in entries] == [
        "provider.request",
        "provider.resent",
        "provider.resent",
        "message.assistant",
        "provider.request",  # a new process streams again, meets the same, and learns again
        "provider.resent",
        "provider.resent",
        "message.assistant",
    ]
    first, probe, resend = entries[:3]
    assert [probe.payload["reason"], resend.payload["reason"]] == ["probe", "unstreamed"]
    assert probe.payload["request_entry"] == resend.payload["request_entry"] == first.id
    named = [e.payload["sha256"] for e in entries if e.kind != "message.assistant"]
    assert named == posted  # every body POSTed, in order, and nothing else
