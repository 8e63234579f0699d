"""What a pressure decision is decided from: plain values the engine gathers before each one.

Relief never holds the engine and never calls back into it: the engine reads the ledger,
builds the view and measures it, puts the figures here, and records whatever the decision
returns (`relieve.py`, `triggers.py`). Same inputs ⇒ same decision.

`texts` and `counter` are the engine's memoized readers (result renderings, token counts):
deterministic functions of the ledger's bytes, shared so that trial views of a decision cost
no more than the recorded one. `entries` and `blocks` are the engine's lists as read when the
inputs were gathered (not copied: a decision runs at once, and the engine gathers anew after it
appends anything; the checkpoint text is memoized by the blocks object). The clock is read
once, by the engine (`now_ms`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.measure.anchors import Anchor
from comal.context.measure.budget import Budget
from comal.context.measure.tokens import ScaledCounter, TokenCounter, calibrated
from comal.context.view.build import Assembly, FixedParts, ResultTexts, ViewState, build_view
from comal.context.view.conversation import Block, ConversationIndex
from comal.ledger.entry import Entry


@dataclass(frozen=True, slots=True)
class ReliefInputs:
    """The recorded view, its budget and measurements, and what trial views are built from."""

    budget: Budget
    state: ViewState
    """Projections and the checkpoint in force."""
    asm: Assembly
    """The view of `state`, as the next request would send it."""
    estimate: int
    """Its estimated input tokens (measured base when an anchor holds)."""
    entries: Sequence[Entry]
    blocks: Sequence[Block]
    fixed: FixedParts
    texts: ResultTexts
    counter: TokenCounter
    ratio: float
    """Calibration ratio (measured/counted) in force."""
    anchor: Anchor | None
    """The anchor for a request under the checkpoint in force."""
    next_anchor: Anchor | None
    """The anchor for a request under the next checkpoint (a derivation's trial view)."""
    vision: bool
    media_budget_tokens: int
    """The media reserve (`media.media_budget`)."""
    cache_ttl_s: float
    """The prompt cache's time-to-live."""
    now_ms: int
    last_event_seq: int
    """Seq of the newest projection or checkpoint entry (0 when none)."""
    deferred: bool
    """Whether an event was deferred since the last event (one deferral record per turn)."""
    index: ConversationIndex | None = None
    """The conversation index `blocks` came from: a derivation's work state reads its pairing
    rather than pairing every entry again (it checks that the index took exactly `entries`)."""

    @property
    def fixed_tokens(self) -> int:
        """The fixed parts of the view, calibrated."""
        return calibrated(self.asm.fixed_tokens, self.ratio, exact=self.counter.exact)

    @property
    def previous_number(self) -> int:
        """The number of the checkpoint in force (0 when none)."""
        return self.state.checkpoint.number if self.state.checkpoint else 0

    def scaled_counter(self) -> ScaledCounter:
        """The counter a checkpoint is sized with (local counts times the ratio)."""
        return ScaledCounter(self.counter, self.ratio)

    def estimate_of(self, trial: ViewState) -> int:
        """Estimated input tokens of the view a trial state would send.

        A trial keeps the checkpoint in force (a media projection) or adds the next one (a
        derivation); the anchor is that checkpoint's.
        """
        asm = build_view(
            self.blocks, trial, self.fixed, self.texts, self.counter, vision=self.vision
        )
        number = trial.checkpoint.number if trial.checkpoint else 0
        anchor = self.anchor if number == self.previous_number else self.next_anchor
        return asm.estimate(anchor, self.ratio, exact=self.counter.exact)[0]
