"""Reasoning effort on each wire: the golden request fields for every level, and no effort."""

from __future__ import annotations

import dataclasses

import pytest

from comal.config import EFFORTS
from comal.messages import JSONObject, JSONValue
from comal.providers import anthropic_messages, openai_chat, openai_responses
from tests.protocol.golden import check_golden
from tests.protocol.requests import rich_request

REASONING_KEYS = ("reasoning_effort", "reasoning", "thinking", "max_tokens", "max_output_tokens")
WIRES = {
    "openai-chat": ("gpt-5", openai_chat.encode_request),
    "openai-responses": ("gpt-5", openai_responses.encode_request),
    "anthropic-messages": ("claude-sonnet-4-5", anthropic_messages.encode_request),
}


def _reasoning_fields(wire: str, effort: str | None) -> JSONObject:
    model, encode = WIRES[wire]
    # A reserve large enough that no level's thinking budget is clamped to it.
    request = dataclasses.replace(rich_request(wire, model, effort), max_output_tokens=32_000)
    body = encode(request)
    return {key: body[key] for key in REASONING_KEYS if key in body}


def test_every_level_on_every_wire_is_golden() -> None:
    table: dict[str, JSONValue] = {
        wire: {str(level): _reasoning_fields(wire, level) for level in (*EFFORTS, None)}
        for wire in WIRES
    }
    check_golden("effort_levels.json", table)


@pytest.mark.parametrize("wire", list(WIRES))
def test_levels_differ_and_none_asks_for_no_reasoning(wire: str) -> None:
    fields = [_reasoning_fields(wire, level) for level in EFFORTS]
    assert len({str(f) for f in fields}) == len(EFFORTS)
    plain = _reasoning_fields(wire, None)
    assert not {"reasoning_effort", "reasoning", "thinking"} & set(plain)


def test_anthropic_budgets_grow_with_the_level_and_stay_below_max_tokens() -> None:
    budgets = []
    for level in EFFORTS:
        thinking = _reasoning_fields("anthropic-messages", level)["thinking"]
        assert isinstance(thinking, dict)
        budget = thinking["budget_tokens"]
        assert isinstance(budget, int)
        budgets.append(budget)
    assert budgets == sorted(budgets)
    assert len(set(budgets)) == 3
    assert budgets[-1] < 32_000
