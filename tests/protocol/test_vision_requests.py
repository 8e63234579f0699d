"""Vision reaches the wire: a vision model receives a Read PNG as an image on each wire (golden
request tails), a model without vision the text stand-in. The whole path is real: the session's
Read tool, the ledger, the context engine's view and each adapter against the fake server."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx2
import pytest

from comal.agent.core.session import SessionOptions, engine_settings, open_session
from comal.agent.core.toolset import standard_tools
from comal.cli.cmd_context import recorded_engine
from comal.config import Config, ProviderConfig
from comal.ledger.store import Ledger
from comal.messages import JSONValue
from comal.providers.base import Capabilities
from comal.providers.factory import make_provider
from comal.providers.scripted import ScriptedProvider
from comal.testing.fake_server import FakeServer
from tests.protocol.golden import check_golden
from tests.protocol.wiring import WIRES, look, workspace_config

# The smallest valid PNG: 1x1, one grey pixel.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg=="
)
PNG_B64 = base64.b64encode(PNG).decode()


async def second_request(tmp_path: Path, wire: str, *, vision: bool) -> JSONValue:
    config = workspace_config(tmp_path)
    (config.workspace / "shot.png").write_bytes(PNG)
    turns: list[str | dict[str, object]] = [
        {"tool_calls": [{"id": "c1", "name": "Read", "arguments": {"path": "shot.png"}}]},
        "A grey pixel.",
    ]
    with FakeServer(turns) as server, Ledger.open(tmp_path / "ledger.db") as ledger:
        outcome = await look(server, wire, ledger, config, vision=vision)
        assert outcome.answer == "A grey pixel.", outcome
        assert len(server.received) == 2
        return server.received[1].body


def tail(wire: str, body: JSONValue) -> JSONValue:
    """The part of the request that carries the tool result (and its image)."""
    assert isinstance(body, dict)
    if wire == "openai-chat":
        messages = body["messages"]
        assert isinstance(messages, list)
        return messages[3:]
    if wire == "openai-responses":
        items = body["input"]
        assert isinstance(items, list)
        return items[2:]
    messages = body["messages"]
    assert isinstance(messages, list)
    return messages[2:]


@pytest.mark.parametrize("wire", WIRES)
async def test_a_vision_model_receives_the_image(tmp_path: Path, wire: str) -> None:
    request_tail = tail(wire, await second_request(tmp_path, wire, vision=True))
    check_golden(f"vision_{wire.replace('-', '_')}.json", request_tail)
    text = str(request_tail)
    assert PNG_B64 in text
    assert "pixels were not seen" not in text


@pytest.mark.parametrize("wire", WIRES)
async def test_a_model_without_vision_receives_the_stand_in(tmp_path: Path, wire: str) -> None:
    text = str(tail(wire, await second_request(tmp_path, wire, vision=False)))
    assert PNG_B64 not in text
    assert "this model has no vision input, so its pixels were not seen" in text


@pytest.mark.parametrize(
    ("model", "configured", "expected"),
    [
        ("gpt-4o", None, True),  # the catalog says so
        ("qwen2.5-coder-32b", None, False),  # unknown: no vision
        ("qwen2.5-vl-7b", True, True),  # configured
        ("gpt-4o", False, False),  # configured wins
    ],
)
def test_engine_settings_carry_the_providers_vision(
    tmp_path: Path, model: str, configured: bool | None, expected: bool
) -> None:
    cfg = ProviderConfig("p", "openai-chat", "http://h/v1", model=model, vision=configured)
    provider = make_provider(
        cfg, client=httpx2.AsyncClient(), api_key=None, context_window_override=None
    )
    config = Config(home=tmp_path, config_dir=tmp_path, workspace=tmp_path)
    assert provider.capabilities.vision is expected
    assert engine_settings(config, provider, SessionOptions()).vision is expected


@pytest.mark.parametrize("vision", [True, False])
def test_the_recorded_report_counts_images_as_the_session_did(tmp_path: Path, vision: bool) -> None:
    caps = Capabilities(100_000, 4_096, "explicit", vision=vision)
    provider = ScriptedProvider([], model="local-model", capabilities=caps)
    config = Config(home=tmp_path, config_dir=tmp_path, workspace=tmp_path)
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = open_session(ledger, config, provider, standard_tools(), SessionOptions())
        assert session.engine.settings.vision is vision
        ledger.release_lock(session.id)
        assert recorded_engine(ledger, session.id, config).settings.vision is vision
