"""`comal context` and `comal state` speak plain words to people and keep the exact terms in
`--json`."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from comal.cli.main import main
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import configure

JARGON = ("anchor", "measured base", "fingerprint", "1 requests", "(unmeasured)")


def test_context_and_state_say_it_plainly(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(workspace)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with FakeServer(["Done."]) as server:
        configure(workspace, server, "openai-chat")
        assert main(["-p", "do it", "--output-format", "json"]) == 0
        sid = json.loads(capsys.readouterr().out)["session_id"]
    assert main(["context", sid]) == 0
    context = capsys.readouterr().out
    assert main(["state", sid]) == 0
    state = capsys.readouterr().out
    for word in JARGON:
        assert word not in context.lower(), word
        assert word not in state.lower(), word
    assert "The server counted " in context or "Not yet counted by the server" in context
    assert "usage: 1 request (all counted by the server) · input new " in state
    assert main(["context", sid, "--json"]) == 0
    assert "anchor" in json.loads(capsys.readouterr().out)
    assert main(["state", sid, "--json"]) == 0
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert usage["requests"] == 1
