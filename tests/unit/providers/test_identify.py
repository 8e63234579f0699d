"""Loopback servers are used only when they identify themselves as model servers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from comal.providers.identify import identify_server
from comal.testing.fake_server import FakeServer


@pytest.fixture
def plain_http_server(tmp_path: Path) -> Iterator[str]:
    """`python -m http.server`: answers every port probe, serves no model."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize(
    ("style", "kind"),
    [("llamacpp", "llama.cpp"), ("vllm", "vllm"), ("ollama", "openai-compatible")],
)
async def test_servers_say_what_they_are(style: str, kind: str) -> None:
    with FakeServer(discovery_style=style, model="served-model") as server:
        async with httpx2.AsyncClient() as client:
            found = await identify_server(client, server.base_url.rstrip("/"))
    assert found is not None
    assert (found.kind, found.models) == (kind, ("served-model",))
    assert found.base_url.endswith("/v1")


async def test_a_plain_web_server_is_not_a_model_server(plain_http_server: str) -> None:
    async with httpx2.AsyncClient() as client:
        assert await identify_server(client, plain_http_server) is None


async def test_a_closed_port_is_nothing() -> None:
    with FakeServer() as server:
        dead = server.base_url.rstrip("/")
    async with httpx2.AsyncClient() as client:
        assert await identify_server(client, dead) is None


async def test_a_configured_provider_without_a_model_takes_the_only_one_served(
    tmp_path: Path,
) -> None:
    from comal.cli.provider_choice import choose_provider
    from comal.config import load_config

    with FakeServer(discovery_style="llamacpp", model="the-only-model") as server:
        (tmp_path / ".comal").mkdir()
        (tmp_path / ".comal" / "config.toml").write_text(
            f'[providers.local]\nwire = "openai-chat"\nbase_url = "{server.openai_base_url}"\n'
        )
        config = load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)
        chosen = await choose_provider(config, None, None)
    assert chosen.model == "the-only-model"
