"""An effort asked of a model the catalog knows does not reason is said once and never sent;
a model that reasons (or one the catalog does not know) gets it as asked."""

from __future__ import annotations

from pathlib import Path

from comal.agent.core.events import AgentEvent, Notice
from comal.agent.core.loop import run_turn
from comal.agent.core.session import SessionOptions, reconfigure
from comal.ledger.records import WarningRecord
from comal.ledger.store import Ledger
from comal.providers.catalog import known_not_to_reason
from comal.providers.scripted import ScriptedProvider
from tests.unit.agent.session_support import config, opened


def test_the_catalog_knows_which_models_do_not_reason() -> None:
    known = ["gpt-4o-mini-2024-07-18", "qwen2.5-coder:7b", "o3-mini", "claude-3-5-haiku", "x"]
    assert [known_not_to_reason(m) for m in known] == [True, True, False, True, False]


async def test_an_effort_for_a_model_that_does_not_reason_is_said_once_and_not_sent(
    ledger: Ledger, tmp_path: Path
) -> None:
    events: list[AgentEvent] = []
    provider = ScriptedProvider(["one", "two"], model="qwen2.5-coder-0.5b-instruct")
    options = SessionOptions(reasoning_effort="high", emit=events.append)
    s = opened(ledger, tmp_path, provider, options=options)
    await run_turn(s, "hi")
    await run_turn(s, "again")
    note = "qwen2.5-coder-0.5b-instruct is known not to reason: effort 'high' is not sent"
    assert [r.reasoning_effort for r in provider.requests] == [None, None]
    assert [(n.code, n.message) for n in events if isinstance(n, Notice)][-1:] == [
        ("EFFORT_NOT_SENT", note)
    ]
    warnings = [WarningRecord.from_entry(e) for e in ledger.entries(s.id, kinds=("warning",))]
    assert [(w.code, w.message) for w in warnings if w.code == "EFFORT_NOT_SENT"] == [
        ("EFFORT_NOT_SENT", note)
    ]
    # Switching to a model that reasons: the effort asked now goes out.
    reconfigure(s, config(ledger, tmp_path), provider=provider, effort="low", keep_effort=False)
    assert s.options.reasoning_effort is None  # still the same model: not sent either
    reasoning = ScriptedProvider(["three"], model="o4-mini")
    reconfigure(s, config(ledger, tmp_path), provider=reasoning, effort="low", keep_effort=False)
    await run_turn(s, "think")
    assert [r.reasoning_effort for r in reasoning.requests] == ["low"]
