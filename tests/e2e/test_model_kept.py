"""The model chosen in a session is kept when it is resumed (unless `--model` says otherwise),
and the server's model list is read from its `/v1/models`."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from comal.config import ProviderConfig
from comal.ledger.records import RecordedWindow, SessionConfigured
from comal.providers.wires import list_models
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal_here as comal
from tests.e2e.headless_support import configure, ledger_at

pytestmark = pytest.mark.e2e


def test_a_model_chosen_in_the_session_is_kept_on_resume(workspace: Path, home: Path) -> None:
    with FakeServer(["first", "second", "third"]) as server:
        configure(workspace, server, "openai-chat")
        assert comal("-p", "a", cwd=workspace, env_home=home).code == 0
        with ledger_at(home) as ledger:
            (info,) = ledger.sessions()
            window = RecordedWindow(45_000, "discovered")
            # What `/model other-model` in the TUI records.
            ledger.append_record(
                info.id, SessionConfigured("fake", "openai-chat", "other-model", None, window)
            )
        kept = comal("--resume", info.id, "-p", "b", cwd=workspace, env_home=home)
        assert kept.code == 0, kept.stderr
        told = comal(
            "--resume", info.id, "-p", "c", "--model", "fake-model", cwd=workspace, env_home=home
        )
        assert told.code == 0, told.stderr
        models = [r.body.get("model") for r in server.received]
    assert models == ["fake-model", "other-model", "fake-model"]


async def test_the_servers_models_are_listed_from_its_models_endpoint() -> None:
    with FakeServer([], model="served-7b") as server:
        cfg = ProviderConfig("fake", "openai-chat", server.openai_base_url)
        async with httpx2.AsyncClient() as client:
            listed = await list_models(cfg, client, None)
    with FakeServer([], discovery_style="none") as silent:
        cfg = ProviderConfig("fake", "openai-chat", silent.openai_base_url)
        async with httpx2.AsyncClient() as client:
            unlisted = await list_models(cfg, client, None)
    assert (listed, unlisted) == (("served-7b",), None)
