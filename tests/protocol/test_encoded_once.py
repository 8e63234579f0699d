"""A request is encoded once: the bytes the ledger's `provider.request` hashes are the bytes POSTed.

Against `httpx2.MockTransport`, a real adapter, a real ledger and the real loop: the recorded
digest and size are compared with what the server received, including the attempts the retry
wrapper makes, and `send` is shown to POST the bytes it is given rather than encoding again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import httpx2

from comal.agent.core.loop import run_turn
from comal.agent.core.session import SessionOptions, open_session
from comal.agent.core.toolset import standard_tools
from comal.config import Config, ProviderConfig
from comal.ledger.store import Ledger
from comal.messages import user_text
from comal.providers.base import Capabilities, EncodedRequest, ModelRequest, encode_request
from comal.providers.openai_chat import OpenAIChatProvider
from comal.providers.reply import collect
from comal.providers.transport import RetryingProvider

CAPS = Capabilities(context_window=32_768, max_output_tokens=2_048, window_source="explicit")
CFG = ProviderConfig(name="t", wire="openai-chat", base_url="http://h/v1", model="m")


def _chunk(delta: dict[str, object], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return "data: " + json.dumps({"id": "c1", "model": "m", "choices": [choice]}) + "\n\n"


ANSWER = (
    _chunk({"role": "assistant", "content": "Hello."})
    + _chunk({}, "stop")
    + 'data: {"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":40,'
    '"completion_tokens":2,"total_tokens":42}}\n\n' + "data: [DONE]\n\n"
).encode()


class Server:
    """Answers every POST, first with `failures` HTTP 503s, keeping each body it received."""

    def __init__(self, failures: int = 0) -> None:
        self.bodies: list[bytes] = []
        self.failures = failures

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(request.content)
        if len(self.bodies) <= self.failures:
            return httpx2.Response(503, json={"error": {"message": "busy"}})
        return httpx2.Response(200, content=ANSWER, headers={"content-type": "text/event-stream"})


def _config(tmp_path: Path) -> Config:
    return Config(
        home=tmp_path / "home",
        config_dir=tmp_path / "home" / "config",
        workspace=tmp_path,
        env=dict(os.environ),
    )


async def _no_wait(_: float) -> None:
    return None


async def test_the_recorded_digest_is_of_the_bytes_posted_on_every_attempt(
    tmp_path: Path,
) -> None:
    server = Server(failures=1)
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(server)) as client:
        adapter = OpenAIChatProvider(CFG, client=client, api_key=None, capabilities=CAPS)
        provider = RetryingProvider(adapter, 2, sleep=_no_wait)
        with Ledger.open(tmp_path / "ledger.db") as ledger:
            session = open_session(
                ledger, _config(tmp_path), provider, standard_tools(), SessionOptions(max_turns=2)
            )
            assert await run_turn(session, "say hello") == "Hello."
            (entry,) = ledger.entries(session.id, kinds=("provider.request",))
    first, retried = server.bodies
    assert retried == first
    assert entry.payload["sha256"] == "sha256:" + hashlib.sha256(first).hexdigest()
    assert entry.payload["size_bytes"] == len(first)


async def test_send_posts_the_bytes_it_is_given() -> None:
    server = Server()
    request = ModelRequest("m", "sys", (user_text("hi"),))
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(server)) as client:
        provider = OpenAIChatProvider(CFG, client=client, api_key=None, capabilities=CAPS)
        encoded = encode_request(provider, request)
        # The same JSON spaced differently: only a re-encoding would bring the compact form back.
        spaced = json.dumps(json.loads(encoded.body), indent=1).encode()
        reply = await collect(provider.send(EncodedRequest(request, spaced)))
        await collect(provider.send(encoded))
    assert reply.message.text == "Hello."
    assert server.bodies == [spaced, encoded.body]
    assert encoded.body == provider.encode(request)
