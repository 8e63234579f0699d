"""Relief is a pure decision: plain values in, what to record out; the engine records it.

The decision never holds the engine (no module of `relief/`, nor the report, imports it), reads
nothing but its inputs, appends nothing, and decides the same twice; the entry the engine then
appends is the one decided.
"""

from __future__ import annotations

import ast
from pathlib import Path

from comal.context.relief.relieve import CheckpointChoice, ProjectionChoice, relieve
from comal.context.relief.triggers import pressure_step
from comal.context.report import context_report
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import listing, make_engine

CONTEXT = Path(__file__).resolve().parents[3] / "src" / "comal" / "context"


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_decision_module_and_not_the_report_import_the_engine() -> None:
    modules = [*sorted((CONTEXT / "relief").glob("*.py")), CONTEXT / "report.py"]
    modules.append(CONTEXT / "snapshot.py")
    assert len(modules) > 10
    for path in modules:
        assert "comal.context.engine" not in imports(path), path.name


def over_threshold(builder: SessionBuilder) -> None:
    builder.user("Refactor the handlers.")
    for i in range(60):
        builder.turn(
            f"Checking part {i}.",
            [("Bash", {"command": f"grep -n part{i} src"}, listing(f"m{i}", 12), 0)],
        )


def test_the_decision_reads_only_its_inputs_and_the_engine_records_it(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    over_threshold(builder)
    engine = make_engine(ledger, builder.session_id)
    inputs = engine.relief_inputs()
    assert inputs.estimate > inputs.budget.threshold
    recorded = len(ledger.entries(builder.session_id))
    first = relieve(inputs)
    assert relieve(inputs) == first
    assert pressure_step(inputs) == first
    # Deciding appends nothing.
    assert len(ledger.entries(builder.session_id)) == recorded
    view = engine.prepare()
    new = ledger.entries(builder.session_id)[recorded:]
    assert [e.kind for e in new] == [view.actions[0]]
    if isinstance(first, CheckpointChoice):
        assert view.actions == ("checkpoint",)
        assert new[0].payload["text"] == first.draft.text
        assert new[0].payload["before_tokens"] == first.before
        assert new[0].payload["after_tokens"] == first.after
        assert view.estimated_tokens == first.after
    else:
        assert isinstance(first, ProjectionChoice)
        assert view.actions == ("projection",)
        assert new[0].payload["result_ids"] == list(first.plan.result_ids)
    assert view.estimated_tokens <= view.usable_tokens


def test_the_report_renders_from_the_snapshot_alone(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    over_threshold(builder)
    engine = make_engine(ledger, builder.session_id)
    engine.prepare()
    snap = engine.snapshot()
    recorded = len(ledger.entries(builder.session_id))
    report = context_report(snap)
    assert report == engine.report()
    assert report.used_tokens == snap.used_tokens == engine.view().estimated_tokens
    assert report.checkpoint_count == len(snap.checkpoints) == len(engine.checkpoints())
    assert sum(r.tokens for r in report.rows) >= report.used_tokens
    assert len(ledger.entries(builder.session_id)) == recorded
