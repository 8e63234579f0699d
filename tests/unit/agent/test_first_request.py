"""A session's first request sent on token bounds (`ContextEngine.bounded_first_view`,
`agent/core/first_request.py`): the view is the one the exact counts prepare, nothing more is
appended, and the estimate recorded is the exact one, recorded before anything of the reply."""

from __future__ import annotations

import dataclasses

import pytest

from comal.agent.core.first_request import bounded_first
from comal.agent.core.loop import run_turn
from comal.agent.core.session import Session
from comal.context.measure.budget import EngineSettings
from comal.context.measure.tokens import UpperBound, counter_for_model, upper_bound
from comal.errors import AuthError, ContextOverheadError
from comal.ledger.records import UserMessage
from comal.messages import message_to_json, user_text
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from tests.unit.recovery.conftest import Bench

TEXTS = (
    "",
    "hello",
    "a" * 20_000,
    "日本語のテキスト、句読点。" * 400,
    "lone \ud800 surrogate",
    "line\n" * 6_000,
    '{"path": "src/a.py", "old": "x = 1", "new": "x = 2"}',
    "🧠 emoji 👍🏽 and zero\u200bwidth",
    "0f3a9c" * 3_000,
)


@pytest.mark.parametrize(
    "model", ["gpt-4o", "gpt-4", "claude-sonnet-4", "claude-opus-4-7", "gemini-2.5", "qwen"]
)
def test_the_upper_bound_is_never_below_the_count(model: str) -> None:
    counter = counter_for_model(model)
    bound = upper_bound(counter)
    assert isinstance(bound, UpperBound)
    assert (bound.exact, bound.name) == (counter.exact, f"bound:{counter.name}")
    for text in TEXTS:
        assert bound.count(text) >= counter.count(text), text[:20]


def _asked(
    bench: Bench, turns: list[ScriptedTurn | str], text: str = "hi"
) -> tuple[Session, ScriptedProvider]:
    s, provider = bench.open(turns)
    s.write(UserMessage(message_to_json(user_text(text))))
    return s, provider


def test_the_bounded_view_is_the_view_prepare_returns(bench: Bench) -> None:
    s, _ = _asked(bench, ["ok"])
    bounded = s.engine.bounded_first_view()
    assert bounded is not None
    before = bench.ledger.entries(s.id)
    exact = s.engine.prepare()
    assert bench.ledger.entries(s.id) == before
    fields = ("system", "messages", "tools", "output_reserve", "actions", "checkpoint_number")
    assert [getattr(bounded, f) for f in fields] == [getattr(exact, f) for f in fields]
    assert bounded.estimated_tokens >= exact.estimated_tokens


async def test_the_recorded_estimate_is_the_exact_one_and_precedes_the_reply(
    bench: Bench,
) -> None:
    s, provider = _asked(bench, ["Hello there."])
    exact = s.engine.prepare().estimated_tokens
    assert await bounded_first(s) is not None
    assert await run_turn(s, None) == "Hello there."
    kinds = [e.kind for e in bench.ledger.entries(s.id)]
    assert kinds[kinds.index("message.user") :] == [
        "message.user",
        "provider.request",
        "message.assistant",
    ]
    (request,) = bench.ledger.entries(s.id, kinds=("provider.request",))
    assert request.payload["estimated_input_tokens"] == exact
    assert s.engine.bounded_first_view() is None  # a request was made: prepared exactly again
    assert len(provider.requests) == 1


async def test_a_failure_before_any_event_still_records_the_request_first(bench: Bench) -> None:
    s, _ = _asked(bench, [ScriptedTurn(error=AuthError("bad key", status=401))])
    assert s.engine.bounded_first_view() is not None
    with pytest.raises(AuthError):
        await run_turn(s, None)
    kinds = [e.kind for e in bench.ledger.entries(s.id)]
    assert kinds[kinds.index("message.user") :] == [
        "message.user",
        "provider.request",
        "provider.error",
    ]


def test_a_window_the_bounds_cannot_decide_is_left_to_the_exact_counts(bench: Bench) -> None:
    s, _ = _asked(bench, ["ok"])
    exact = s.engine.prepare()
    # A window just large enough for the exact view: the bounds (bytes) no longer fit it.
    window = exact.estimated_tokens * 3
    s.engine.settings = dataclasses.replace(s.engine.settings, window_tokens=window)
    assert isinstance(s.engine.settings, EngineSettings)
    assert s.engine.bounded_first_view() is None
    try:
        view = s.engine.prepare()
    except ContextOverheadError:
        return  # the exact counts refuse it too: still not the bounds' decision
    assert view.estimated_tokens == exact.estimated_tokens
