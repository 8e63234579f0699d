"""`comal doctor` checks what `comal -p` would use: the server found on loopback when nothing
is configured, and the wire's own endpoint (a server that does not speak it is not `ok`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from comal.cli.main import main
from comal.testing.fake_server import FakeServer


class ModelsOnly(BaseHTTPRequestHandler):
    """Lists a model, and answers 404 to every POST (a server that speaks no chat wire)."""

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "m1"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def models_only() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ModelsOnly)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_detected_server_is_checked_when_nothing_is_configured(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(workspace)
    with FakeServer(discovery_style="llamacpp", model="the-model") as server:
        monkeypatch.setenv("COMAL_LOOPBACK_PORTS", str(server.port))
        code = main(["doctor"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    # The sandbox's line comes first (a session's first line says whether Bash is confined).
    lines = [line for line in out.splitlines() if not line.startswith("ok  sandbox:")]
    assert lines[0] == "no providers configured: `comal -p` uses the server found on loopback"
    assert lines[1].startswith(f"ok  llama.cpp@{server.port} (detected) (openai-chat)")
    assert "no providers configured, and" not in err


def test_a_server_that_does_not_speak_the_wire_is_not_ok(
    workspace: Path,
    models_only: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(workspace)
    (workspace / ".comal").mkdir()
    (workspace / ".comal" / "config.toml").write_text(
        f'[providers.local]\nwire = "openai-chat"\nbase_url = "{models_only}"\nmodel = "m1"\n'
    )
    monkeypatch.setenv("COMAL_LOOPBACK_PORTS", "9")  # nothing else is looked for
    code = main(["doctor"])
    out = [line for line in capsys.readouterr().out.splitlines() if "sandbox:" not in line]
    assert code == 4
    assert out[0].startswith("BAD local (openai-chat)")
    assert out[1].startswith("    ok  models")
    assert out[2] == (
        f"    BAD wire   {models_only}/chat/completions  HTTP 404 to an empty request"
        " — this server may not speak openai-chat: try wire = 'openai-responses'"
    )
