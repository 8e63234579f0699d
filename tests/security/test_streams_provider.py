"""Hostile provider answers on loopback, through the real CLI: a response that trickles in
forever, a redirect, and a stream whose chunks carry `"choices": null`. Each must end the run
with a named provider error and a non-zero exit, never an "answered" session with no text.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from comal.ledger import Ledger
from tests.e2e.headless_support import Run, comal

pytestmark = pytest.mark.e2e

Behaviour = Callable[[BaseHTTPRequestHandler], None]


class _Handler(BaseHTTPRequestHandler):
    behaviour: Behaviour
    posts: list[str]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        if not self.path.endswith("/chat/completions"):
            self.do_GET()  # discovery probes (Ollama's /api/show) find nothing here
            return
        self.posts.append(self.path)
        # The client cutting the stream is what some of these tests want.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.behaviour(self)


@pytest.fixture
def serve() -> Iterator[Callable[[Behaviour], tuple[str, list[str]]]]:
    servers: list[ThreadingHTTPServer] = []

    def start(behaviour: Behaviour) -> tuple[str, list[str]]:
        posts: list[str] = []
        handler = type(
            "Handler", (_Handler,), {"behaviour": staticmethod(behaviour), "posts": posts}
        )
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1", posts

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def configure(workspace: Path, base_url: str, **extra: float) -> None:
    lines = [
        'default_provider = "hostile"',
        "[providers.hostile]",
        'wire = "openai-chat"',
        f'base_url = "{base_url}"',
        'model = "m"',
        "context_window = 32768",
        "max_retries = 0",
        *(f"{key} = {value}" for key, value in extra.items()),
    ]
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text("\n".join(lines) + "\n")


def statuses(home: Path) -> list[str]:
    with Ledger.open(home / "ledger.db") as ledger:
        return [s.status for s in ledger.sessions()]


def failed_with(run: Run, code: str) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code == 4, (run.code, run.stdout, run.stderr)
    assert f"{code}:" in run.stderr, run.stderr
    assert run.stdout.strip() == ""  # no (empty) answer printed


def trickle(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.end_headers()
    for _ in range(120):  # one byte a second: every read is quick, the response never ends
        handler.wfile.write(b":")
        handler.wfile.flush()
        time.sleep(1)


def test_a_trickling_response_is_cut_at_its_deadline(
    serve: Callable[[Behaviour], tuple[str, list[str]]], workspace: Path, home: Path
) -> None:
    url, posts = serve(trickle)
    configure(workspace, url, timeout_s=30, response_deadline_s=3)

    run = comal("-p", "hello", cwd=workspace, env_home=home, timeout=60)

    failed_with(run, "RESPONSE_DEADLINE")
    assert "within the deadline of 3 s (response_deadline_s)" in run.stderr
    assert posts == ["/v1/chat/completions"]  # not retried
    assert statuses(home) == ["failed"]


def redirect(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(302)
    handler.send_header("location", "http://127.0.0.1:9/elsewhere")
    handler.send_header("content-length", "0")
    handler.end_headers()


def test_a_redirect_is_a_provider_error_not_an_empty_answer(
    serve: Callable[[Behaviour], tuple[str, list[str]]], workspace: Path, home: Path
) -> None:
    url, posts = serve(redirect)
    configure(workspace, url)

    run = comal("-p", "hello", cwd=workspace, env_home=home)

    failed_with(run, "REDIRECT")
    assert "a redirect to http://127.0.0.1:9/elsewhere" in run.stderr
    assert posts == ["/v1/chat/completions"]
    assert statuses(home) == ["failed"]


def null_choices(handler: BaseHTTPRequestHandler) -> None:
    body = (
        b'data: {"id":"x","object":"chat.completion.chunk","choices":null}\n\n'
        b'data: {"id":"x","object":"chat.completion.chunk","choices":null}\n\n'
        b"data: [DONE]\n\n"
    )
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_a_stream_of_null_choices_is_a_provider_error(
    serve: Callable[[Behaviour], tuple[str, list[str]]], workspace: Path, home: Path
) -> None:
    url, _ = serve(null_choices)
    configure(workspace, url)

    run = comal("-p", "hello", cwd=workspace, env_home=home)

    failed_with(run, "MALFORMED_STREAM")
    assert "`choices` was null" in run.stderr
    assert statuses(home) == ["failed"]


@pytest.mark.parametrize("value", ["0", "-1", '"soon"', "true"])
def test_a_bad_deadline_is_a_clear_config_error(workspace: Path, home: Path, value: str) -> None:
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text(
        '[providers.x]\nwire = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
        f"response_deadline_s = {value}\n"
    )
    run = comal("-p", "hello", cwd=workspace, env_home=home)
    assert run.code == 2, run.stderr
    assert "providers.x.response_deadline_s must be a positive number" in run.stderr
