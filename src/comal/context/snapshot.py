"""A frozen picture of the engine before its next request: what `/context` renders from.

Plain values only (`engine.snapshot()` fills them in, appending nothing), so the report
(`report.py`) neither reads the ledger nor measures anything itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from comal.context.measure.anchors import Anchor
from comal.context.measure.budget import Budget
from comal.context.relief.recorded import Checkpoint
from comal.context.view.build import Assembly, ViewState


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """The next request of one session: its view, budget and measurements."""

    session_id: str
    model: str
    counter_name: str
    counter_exact: bool
    budget: Budget
    window_source: str
    state: ViewState
    """Projections and the checkpoint in force."""
    asm: Assembly
    """The view the next request would send."""
    used_tokens: int
    used_measured: bool
    """Whether `used_tokens` stands on a provider-measured base (an anchor)."""
    ratio: float
    """Calibration ratio (measured/counted) in force."""
    anchor: Anchor | None
    checkpoints: tuple[Checkpoint, ...]
    pending_compaction: bool
    media_budget_tokens: int
    plugin_schema_tokens: tuple[tuple[str, int], ...]
    """(plugin, schema tokens as counted locally) of each loaded plugin."""
