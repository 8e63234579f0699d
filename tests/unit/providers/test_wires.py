"""The registry of wires: every declared wire has its `Wire`, and each answers for itself."""

from __future__ import annotations

import pytest

from comal.config import ProviderConfig, WireApi
from comal.errors import ConfigError
from comal.messages import ReasoningPart
from comal.providers.wires import WIRES, wire_of


def test_every_declarable_wire_is_registered_with_its_own_adapter() -> None:
    assert list(WIRES) == list(WireApi)
    assert {api: wire.adapter.wire for api, wire in WIRES.items()} == {api: api for api in WireApi}


def test_each_wire_says_what_its_servers_expect() -> None:
    answers = {
        str(api): (
            wire.models_url("http://h:1/v1/"),
            wire.listing_headers("k"),
            wire.listing_headers(None),
            wire.versioned_base,
            str(wire.fallback),
            wire.lists_served_model,
        )
        for api, wire in WIRES.items()
    }
    bearer = {"authorization": "Bearer k"}
    assert answers == {
        "openai-chat": ("http://h:1/v1/models", bearer, {}, True, "openai-responses", True),
        "openai-responses": ("http://h:1/v1/models", bearer, {}, True, "openai-chat", True),
        "anthropic-messages": (
            "http://h:1/v1/models",
            {"anthropic-version": "2023-06-01", "x-api-key": "k"},
            {"anthropic-version": "2023-06-01"},
            False,
            "openai-chat",
            False,
        ),
    }


def test_reasoning_is_replayable_only_with_what_its_wire_needs() -> None:
    parts = {
        "text": ReasoningPart("w", "m", text="t"),
        "signature": ReasoningPart("w", "m", text="t", signature="s"),
        "encrypted": ReasoningPart("w", "m", encrypted_content="e"),
    }
    taken = {
        str(api): sorted(name for name, part in parts.items() if wire.replayable(part))
        for api, wire in WIRES.items()
    }
    assert taken == {
        "openai-chat": ["signature", "text"],
        "openai-responses": ["encrypted"],
        "anthropic-messages": ["signature"],
    }


def test_an_unknown_wire_is_a_configuration_error() -> None:
    cfg = ProviderConfig(name="x", wire="smoke-signals", base_url="http://h/v1", model="m")
    with pytest.raises(ConfigError, match=r"providers\.x\.wire 'smoke-signals' is not a known"):
        wire_of(cfg)
