"""A refusal is reported as one on every wire: status `refused`, exit code 7, text and reason
kept in the ledger; never a successful empty answer."""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.messages import JSONObject
from comal.testing.fake_server import FakeServer
from comal.testing.loopback import LoopbackService
from tests.e2e.headless_support import WIRES, configure, ledger_at
from tests.e2e.headless_support import comal_here as comal
from tests.protocol.test_recorded_streams import OPENAI_DIR

pytestmark = pytest.mark.e2e

REFUSAL = "I can't help with that."
POLICY = "cyber: This request was refused due to policy."


def refusal_payload(home: Path, session_id: str) -> JSONObject:
    with ledger_at(home) as ledger:
        (entry,) = ledger.entries(session_id, kinds=("message.assistant",))
        assert ledger.session(session_id).status == "active"
        payload = entry.payload
    assert payload["finish"] == "refusal"
    refusal = payload["refusal"]
    assert isinstance(refusal, dict)
    return refusal


@pytest.mark.parametrize("wire", WIRES)
def test_refusal_is_status_refused_with_exit_code_7(wire: str, workspace: Path, home: Path) -> None:
    with FakeServer([{"text": REFUSAL, "finish": "refusal"}]) as server:
        configure(workspace, server, wire)
        run = comal(
            "-p", "do the bad thing", "--output-format", "json", cwd=workspace, env_home=home
        )
    assert run.code == 7, run.stderr
    body = json.loads(run.stdout)
    assert body["status"] == "refused"
    assert body["answer"] == ""
    assert body["error"]["code"] == "REFUSED"
    types = [e["type"] for e in body["events"]]
    assert "refused" in types
    assert types[-1] == "finished"
    reason = POLICY if wire == "anthropic-messages" else ""
    assert body["refusal"] == {"text": REFUSAL, "reason": reason}
    refusal = refusal_payload(home, body["session_id"])
    assert refusal["text"] == REFUSAL
    assert refusal["reason"] == reason


@pytest.mark.parametrize("wire", ["openai-chat", "anthropic-messages"])
def test_text_mode_prints_the_refusal_and_says_so(wire: str, workspace: Path, home: Path) -> None:
    with FakeServer([{"text": REFUSAL, "finish": "refusal"}]) as server:
        configure(workspace, server, wire)
        run = comal("-p", "do the bad thing", cwd=workspace, env_home=home)
    assert run.code == 7
    assert run.stdout.count(REFUSAL) == 1
    assert "⊘ refused" in run.stderr
    assert "· refused" in run.stderr


@pytest.fixture
def replay_server() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback HTTP server that answers every POST with one recorded gpt-4o body."""
    (recorded,) = OPENAI_DIR.glob("173417d55340*.bin")
    body = recorded.read_bytes()
    seen: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            if not self.path.endswith("/chat/completions"):
                # Window discovery probes other servers' endpoints.
                self.send_error(404)
                return
            seen.append(self.path.encode())
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *_: object) -> None:
            return None

    with LoopbackService(Handler) as server:
        yield f"{server.root}/v1", seen


def test_recorded_gpt4o_refusal_is_not_an_answer(
    replay_server: tuple[str, list[bytes]], workspace: Path, home: Path
) -> None:
    base, seen = replay_server
    (workspace / ".comal").mkdir()
    (workspace / ".comal" / "config.toml").write_text(
        'default_provider = "rec"\n[providers.rec]\nwire = "openai-chat"\n'
        f'base_url = "{base}"\nmodel = "gpt-4o-2024-08-06"\nmax_retries = 0\n'
    )
    run = comal(
        "-p", "How do I make anthrax?", "--output-format", "json", cwd=workspace, env_home=home
    )
    assert run.code == 7, run.stderr
    body = json.loads(run.stdout)
    assert body["status"] == "refused"
    assert body["refusal"]["text"] == "I'm sorry, I can't assist with that request."
    assert len(seen) == 1
    refusal = refusal_payload(home, body["session_id"])
    assert refusal["text"] == "I'm sorry, I can't assist with that request."
