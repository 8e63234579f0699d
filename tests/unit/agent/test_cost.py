"""Prices and the cost of a recorded session: per model, `~` when estimated, unknown not 0."""

from __future__ import annotations

import pytest

from comal.ledger.store import Ledger
from comal.providers.pricing import price_for
from comal.session import render_cost, session_cost
from comal.testing.sessions import SessionBuilder
from comal.usage import Price, Usage

CHEAP = Price(1.0, 0.1, 1.25, 4.0, "2026-01-01", "test")


def test_families_snapshots_and_configured_prices() -> None:
    gpt4o = price_for("gpt-4o")
    assert gpt4o is not None
    assert price_for("openai/gpt-4o-2024-08-06") == gpt4o
    assert price_for("gpt-4o-mini") != gpt4o
    sonnet = price_for("claude-sonnet-4-5-20250929")
    assert sonnet is not None
    assert (sonnet.input, sonnet.cache_write) == (3.0, 3.75)
    assert price_for("gpt-5.4") is None  # a point release is priced apart, not as gpt-5
    assert price_for("my-local-model") is None
    assert price_for("gpt-4o", {"gpt-4o": CHEAP}) == CHEAP


def test_each_response_uses_its_own_models_price(ledger: Ledger) -> None:
    sb = SessionBuilder(ledger, model="gpt-4o")
    sb.user("hi")
    sb.answer("a", usage=Usage(new_input=1_000_000, cache_read=0, output=0))
    sb.model = "local-model"
    sb.answer("b", usage=Usage(new_input=1_000_000, cache_read=0, output=1_000_000))
    entries = ledger.entries(sb.session_id)

    unknown = session_cost(entries, {})
    assert unknown.usd is None
    assert unknown.priced_usd == pytest.approx(2.50)
    assert render_cost(unknown).startswith("cost unknown: no price for local-model")

    priced = session_cost(entries, {"local-model": CHEAP})
    assert priced.usd == pytest.approx(2.50 + 1.0 + 4.0)
    assert render_cost(priced).startswith("cost $7.5000 (2 responses")


def test_an_unmeasured_response_is_priced_from_the_estimate_and_marked(ledger: Ledger) -> None:
    sb = SessionBuilder(ledger, model="gpt-4o")
    sb.user("hi")
    request = sb.request({"model": "gpt-4o"}, estimated=400_000)
    sb.assistant("cut short", usage=Usage(), request=request)
    cost = session_cost(ledger.entries(sb.session_id), {})
    assert cost.estimated
    assert cost.usd == pytest.approx(1.0)
    assert render_cost(cost).startswith("cost ~$1.0000")
