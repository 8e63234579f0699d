"""Steps of hand-built recorded sessions (a `SessionPlan`), shared by the replay tests."""

from __future__ import annotations

from comal.importers.plan import SessionPlan
from comal.ledger import Entry
from comal.messages import TextPart, ToolCallPart
from comal.replay.comal_policy import ComalPolicy
from comal.replay.metrics import Totals
from comal.replay.rendering import SegmentCache
from comal.replay.replayer import call_budgets, replay_policy
from comal.replay.transcript import Transcript
from comal.usage import Usage


def log_step(plan: SessionPlan, number: int, output: str, result_at: int | None = None) -> None:
    """One short reply calling `cat log<number>` (40 output tokens), answered by `output`
    (recorded at `result_at`, when given)."""
    call = ToolCallPart(f"c{number}", "bash", {"command": f"cat log{number}"})
    plan.assistant(
        (TextPart(f"Reading {number}."), call),
        model="m",
        finish="tool_calls",
        usage=Usage(output=40),
        usage_raw=None,
    )
    if result_at is not None:
        plan.at_ms = result_at
    plan.tool_result(f"c{number}", output.encode(), line=None)


def replay_comal(transcript: Transcript, window: int) -> tuple[Totals, list[Entry]]:
    """Comal's replay of `transcript` at `window`: its totals and the entries of its ledger."""
    cache = SegmentCache()
    budgets = call_budgets(transcript, window)
    policy = ComalPolicy(transcript, budgets, cache)
    try:
        totals = replay_policy(transcript, policy, budgets, cache)
        assert policy._ledger is not None
        return totals, policy._ledger.entries(policy._session)
    finally:
        policy.close()
