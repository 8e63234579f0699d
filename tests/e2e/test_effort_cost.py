"""Effort and cost end to end, on every wire of the loopback fake server."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import WIRES, configure, ledger_at
from tests.e2e.headless_support import comal_here as comal

pytestmark = pytest.mark.e2e

USAGE = {"input_tokens": 10_000, "cached_tokens": 6_000, "cache_write_tokens": 1_000}
PRICE = (
    '\n[prices."fake-model"]\ninput = 2.0\ncached_input = 0.5\ncache_write = 2.5\n'
    'output = 10.0\nas_of = "2026-11-05"\n'
)
# 3,000 new x $2 + 6,000 cached x $0.5 + 1,000 written x $2.5 + 500 out x $10, per million
EXPECTED_USD = 0.0165


def _effort_field(wire: str, body: Mapping[str, object]) -> object:
    if wire == "openai-chat":
        return body.get("reasoning_effort")
    if wire == "openai-responses":
        reasoning = body.get("reasoning")
        return reasoning.get("effort") if isinstance(reasoning, dict) else None
    thinking = body.get("thinking")
    return thinking.get("budget_tokens") if isinstance(thinking, dict) else None


@pytest.mark.parametrize("wire", WIRES)
def test_effort_from_the_flag_and_from_the_provider_table(wire: str, tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    with FakeServer(["one", "two", "three"]) as server:
        configure(ws, server, wire, reasoning_effort="low", max_output_tokens=32_000)
        assert comal("-p", "a", cwd=ws, env_home=home).code == 0
        assert comal("-p", "b", "--effort", "high", cwd=ws, env_home=home).code == 0
        bad = comal("-p", "c", "--effort", "huge", cwd=ws, env_home=home)
        bodies = [r.body for r in server.received]
    low, high = (_effort_field(wire, b) for b in bodies)
    if wire == "anthropic-messages":
        assert isinstance(low, int)
        assert isinstance(high, int)
        assert low < high
    else:
        assert (low, high) == ("low", "high")
    assert bad.code == 2
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize("wire", WIRES)
def test_cost_from_the_measured_usage(wire: str, tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    turn = {"text": "Done.", "usage": {**USAGE, "output_tokens": 500}}
    with FakeServer([turn, turn]) as server:
        configure(ws, server, wire)
        unpriced = comal("-p", "a", cwd=ws, env_home=home)
        (ws / ".comal" / "config.toml").write_text(
            (ws / ".comal" / "config.toml").read_text() + PRICE
        )
        priced = comal("-p", "b", "--output-format", "json", cwd=ws, env_home=home)
    assert unpriced.code == 0, unpriced.stderr
    assert "cost unknown: no price for fake-model" in unpriced.stderr
    result = json.loads(priced.stdout)
    assert result["cost"]["usd"] == pytest.approx(EXPECTED_USD)
    assert result["cost"]["estimated"] is False
    with ledger_at(home) as ledger:
        sid = result["session_id"]
        (reply,) = ledger.entries(sid, kinds=("message.assistant",))
    usage = reply.payload["usage"]
    assert isinstance(usage, dict)
    assert (usage["new_input"], usage["cache_read"], usage["cache_write"], usage["output"]) == (
        3_000,
        6_000,
        1_000,
        500,
    )
    state = comal("state", sid, cwd=ws, env_home=home)
    assert f"cost ${EXPECTED_USD:.4f} (1 response; prices of 2026-11-05)" in state.stdout
    context = json.loads(comal("context", sid, "--json", cwd=ws, env_home=home).stdout)
    assert context["cost"]["usd"] == pytest.approx(EXPECTED_USD)
