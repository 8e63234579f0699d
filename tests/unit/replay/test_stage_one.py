"""Stage 1 in the replay: where projecting old large outputs pays, the engine projects.

On the shared recordings every projection the engine weighs costs more per call than a
checkpoint (docs/benchmarks.md, "Stage 1: why projections do not happen"). This session has
the shape where it does not: large reads fill the window first, then many small steps, each
reading a file a listing three steps before named. The replay must show the projection
happening, the small results staying verbatim, and the facts they carry staying in view (a
checkpoint would have taken them out of view, every one still named).
"""

from __future__ import annotations

from pathlib import Path

from comal.importers.plan import ParsedSession, SessionPlan
from comal.messages import TextPart, ToolCallPart
from comal.replay.transcript import Transcript, transcript_from
from comal.usage import Usage
from tests.unit.context.conftest import listing
from tests.unit.replay.plans import log_step, replay_comal

TABLES = 8


def _table(k: int) -> str:
    return "".join(f"{k},{i},{i * i}\n" for i in range(500))  # ~3,500 tokens


def _session(small_steps: int) -> Transcript:
    plan = SessionPlan(Path("stage1.json"), "openai-chat")
    plan.user_text("Load the data tables, then check every module against them.")
    for k in range(TABLES):
        log_step(plan, k, _table(k))
    for k in range(TABLES, TABLES + small_steps):
        # Each step reads a module that the listing three steps before named (a fact).
        named = f"src/m{k - 3}/module_{k % 12}.py" if k - 3 >= TABLES else "src"
        call = ToolCallPart(f"c{k}", "bash", {"command": f"ls {named}"})
        plan.assistant(
            (TextPart("Checking the next module."), call),
            model="m",
            finish="tool_calls",
            usage=Usage(output=40),
            usage_raw=None,
        )
        plan.tool_result(f"c{k}", listing(f"m{k}", 12).encode(), line=None)
    parsed = ParsedSession(
        "hand", "stage1.json", "hand", "", "", "m", "You check data.", plan.done()
    )
    return transcript_from(parsed)


def test_old_large_outputs_are_projected_when_that_pays() -> None:
    transcript = _session(small_steps=60)
    totals, entries = replay_comal(transcript, 32_000)

    projections = [e for e in entries if e.kind == "projection"]
    assert len(projections) == totals.projections
    assert totals.projections >= 1
    assert totals.overflows == 0
    (first, *_) = projections
    options = first.payload["options"]
    assert isinstance(options, list)
    weighed = {str(o["action"]): o for o in options if isinstance(o, dict)}
    assert weighed["projection"]["viable"] is True
    assert "the projection is enough" in str(weighed["checkpoint"]["why"])
    # Only the large reads became references: every small result stays verbatim.
    results = [e.id for e in entries if e.kind == "tool.result"]
    projected = first.payload["result_ids"]
    assert isinstance(projected, list)
    assert projected
    assert set(projected) <= set(results[:TABLES])
    # The facts the small steps read back stay in view; every output stays named.
    assert totals.facts_total > 0
    assert totals.facts_in_view == totals.facts_total
    assert totals.facts_reachable == totals.facts_total
