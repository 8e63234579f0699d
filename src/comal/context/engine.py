"""The context engine: active memory for the next request, kept within budget.

`prepare()` is called before every model call (so pressure is checked after every batch of tool
results, not only at turn starts). It reads the ledger, builds the view, and under pressure
appends a `projection` (stage 1) or a `checkpoint` (stage 2) entry before returning the view
to send. Every decision is an entry, and the view is a pure function of the entries, so a
resumed session rebuilds byte-identical requests.

Invariants:
- `prepare()` never returns a view that does not fit: it raises `ContextOverheadError` when the
  fixed parts alone cannot fit, and `ContextPressureLoopError` when derivations stop making
  progress (never more than two without progress) or even a minimal checkpoint cannot fit.
- Between pressure events the request only grows by appending.
- No model is ever called to shrink the context.
"""

from __future__ import annotations

from comal.context.anchors import Fingerprint, calibration_ratio, find_anchor, tools_digest
from comal.context.budget import (
    Budget,
    EngineSettings,
    default_margin,
    overhead_message,
    session_outputs,
    size_output_reserve,
    truncated_reserves,
)
from comal.context.calibration import (
    RECALIBRATE_SHIFT,
    calibration_payload,
    measured_after,
    refused_size,
)
from comal.context.checkpoint import Draft, derive
from comal.context.conversation import Block, ConversationIndex
from comal.context.decisions import append_checkpoint, append_projection
from comal.context.invariants import check
from comal.context.pressure import cycle_cost, growth_per_call
from comal.context.projection import plan_projection
from comal.context.rendering import preview_chars
from comal.context.report import ContextReport, context_report
from comal.context.state import (
    USER_TRIGGERS,
    Checkpoint,
    checkpoints,
    pressure_guard,
    state_with_draft,
    view_state,
)
from comal.context.tokens import (
    MemoCounter,
    ScaledCounter,
    TokenCounter,
    calibrated,
    counter_for_model,
)
from comal.context.view import (
    MESSAGE_OVERHEAD,
    Assembly,
    FixedParts,
    PreparedView,
    ResultTexts,
    ViewState,
    build_view,
)
from comal.errors import (
    ContextLengthError,
    ContextOverheadError,
    ContextPressureLoopError,
    InvariantError,
    OutputLengthError,
)
from comal.ledger.entry import Entry
from comal.ledger.store import Ledger

__all__ = [
    "Checkpoint",
    "ContextEngine",
    "EngineSettings",
    "Fingerprint",
    "FixedParts",
    "PreparedView",
]


class ContextEngine:
    """Builds and guards active memory for one session.

    Args:
        ledger: the open ledger.
        session_id: the session.
        settings: budget settings.
        fixed: system prompt, custom instructions, tool schemas.
        model: the model the requests go to (selects the counter and calibration).
        counter: override the token counter (default `counter_for_model(model)`).
        fingerprint: what the agent records as request fingerprint (effort, digests); the
            engine fills in the checkpoint. Default: model and tool catalog only.
    """

    def __init__(
        self,
        ledger: Ledger,
        session_id: str,
        settings: EngineSettings,
        fixed: FixedParts,
        *,
        model: str,
        counter: TokenCounter | None = None,
        fingerprint: Fingerprint | None = None,
    ) -> None:
        self.ledger = ledger
        self.session_id = session_id
        self.settings = settings
        self.fixed = fixed
        self.model = model
        self.counter = MemoCounter(counter or counter_for_model(model))
        self.fingerprint = fingerprint or Fingerprint(
            model, tools_digest=tools_digest(fixed.all_tools)
        )
        self._entries: list[Entry] = []
        self._index = ConversationIndex()
        self._indexed = 0
        self._blocks: list[Block] = []
        self._blocks_seq = -1
        self._texts: ResultTexts | None = None
        self._last_counted: tuple[int, int] | None = None
        self._send_cap: int | None = None

    # --- reading --------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """The session's entries, read incrementally from the ledger."""
        last = self._entries[-1].seq if self._entries else 0
        self._entries.extend(self.ledger.entries(self.session_id, after_seq=last))
        return self._entries

    def _conversation(self) -> list[Block]:
        entries = self.entries()
        last = entries[-1].seq if entries else 0
        if last != self._blocks_seq:
            self._index.extend(entries[self._indexed :])
            self._indexed = len(entries)
            self._blocks = self._index.blocks()
            self._blocks_seq = last
        return self._blocks

    def budget(self) -> Budget:
        """The budget for the next request."""
        window = self.settings.window_tokens
        margin = self.settings.margin_tokens
        return Budget(
            window,
            self.output_reserve(),
            default_margin(window) if margin is None else margin,
            self.settings.threshold_ratio,
        )

    def texts(self) -> ResultTexts:
        """Memoized result renderings for this engine's settings."""
        if self._texts is None:
            usable = (
                self.settings.window_tokens - 4_096 - default_margin(self.settings.window_tokens)
            )
            self._texts = ResultTexts(
                self.ledger, self.settings.large_output_threshold_bytes, preview_chars(usable)
            )
        return self._texts

    def state(self) -> ViewState:
        """Projections and the checkpoint in force."""
        return view_state(self.entries())

    def assemble(self, state: ViewState | None = None) -> Assembly:
        """Build the view for `state` (default: the recorded one)."""
        blocks = self._conversation()
        return build_view(
            blocks,
            state or self.state(),
            self.fixed,
            self.texts(),
            self.counter,
            vision=self.settings.vision,
        )

    def ratio(self) -> float:
        """The calibration ratio in force for this model."""
        return calibration_ratio(self.entries(), self.model)

    def estimate(self, asm: Assembly, state: ViewState) -> tuple[int, bool]:
        """(estimated input tokens, whether the base is measured) for an assembled view."""
        ratio = self.ratio()
        number = state.checkpoint.number if state.checkpoint else None
        anchor = find_anchor(self.entries(), self.fingerprint.with_checkpoint(number))
        if anchor is None:
            return calibrated(asm.total_tokens, ratio, exact=self.counter.exact), False
        newer = [p for p in asm.parts if p.seq > anchor.request_seq]
        delta = sum(p.tokens for p in newer) + MESSAGE_OVERHEAD * 2 * bool(newer)
        return anchor.measured_tokens + calibrated(delta, ratio, exact=self.counter.exact), True

    # --- the output reserve ---------------------------------------------------------------

    def output_reserve(self) -> int:
        """The output reserve for the next request, from the session's recorded outputs."""
        entries = self.entries()
        cap = min(self.settings.max_output_tokens, max(self.settings.window_tokens // 2, 1))
        return size_output_reserve(
            session_outputs(entries),
            truncated_reserves(entries),
            max_output=cap,
            fixed=self.settings.output_reserve_tokens,
        )

    def grow_output_reserve(self) -> int:
        """The larger reserve after an OUTPUT_LENGTH (call after `response.discarded`).

        Raises:
            OutputLengthError: the reserve that overflowed was already the largest possible.
        """
        truncated = truncated_reserves(self.entries())
        new = self.output_reserve()
        last = truncated[-1] if truncated else 0
        if new <= last:
            raise OutputLengthError(
                f"the response needed more than {last:,} output tokens, the most this model and"
                f" window allow ({self.settings.max_output_tokens:,} max output, window"
                f" {self.settings.window_tokens:,}); ask for smaller steps"
            )
        return new

    def lower_output_reserve(self, to: int) -> None:
        """Send at most `to` output tokens on the next request ("input + max_tokens exceed")."""
        self._send_cap = max(1, to)

    # --- preparing a view -----------------------------------------------------------------

    def view(self) -> PreparedView:
        """The current view, appending nothing (no invariant check)."""
        state = self.state()
        asm = self.assemble(state)
        return self._prepared(asm, state, self.budget(), ())

    def _prepared(
        self, asm: Assembly, state: ViewState, budget: Budget, actions: tuple[str, ...]
    ) -> PreparedView:
        estimate, measured = self.estimate(asm, state)
        # Send exactly the budgeted reserve, not all the room left: what the budget counts is
        # what the provider is asked for, and an OUTPUT_LENGTH can then be retried larger.
        send = min(self.settings.max_output_tokens, budget.output_reserve)
        if self._send_cap is not None:
            send = min(send, self._send_cap)
        return PreparedView(
            system=asm.system,
            messages=asm.messages,
            tools=asm.tools,
            output_reserve=max(send, 1),
            estimated_tokens=estimate,
            measured_base=measured,
            checkpoint_number=state.checkpoint.number if state.checkpoint else None,
            actions=actions,
            counted_tokens=asm.total_tokens,
            usable_tokens=budget.usable,
            threshold_tokens=budget.threshold,
        )

    def _check_overhead(self, asm: Assembly, budget: Budget) -> None:
        fixed = calibrated(asm.fixed_tokens, self.ratio(), exact=self.counter.exact)
        if fixed + budget.output_reserve + budget.margin > budget.window:
            raise ContextOverheadError(overhead_message(asm, budget, fixed))

    def prepare(self) -> PreparedView:
        """The view to send next, after relieving pressure if needed.

        Raises:
            ContextOverheadError: the fixed parts, reserve and margin do not fit the window.
            ContextPressureLoopError: derivations stopped making progress, or nothing fits.
            InvariantError: a call without its result, or another broken invariant.
        """
        self._record_calibration()
        budget = self.budget()
        state = self.state()
        asm = self.assemble(state)
        self._check_overhead(asm, budget)
        estimate, _ = self.estimate(asm, state)
        actions: list[str] = []
        requested = self.pending_compaction()
        if requested is not None:
            self._derive(requested, estimate, budget)
            actions.append("checkpoint")
        elif estimate > budget.threshold:
            actions.append(self._relieve(asm, state, budget, estimate))
        if actions:
            state = self.state()
            asm = self.assemble(state)
        view = self._prepared(asm, state, budget, tuple(actions))
        if view.estimated_tokens > budget.usable:
            raise ContextPressureLoopError(
                f"even after a checkpoint the view needs ~{view.estimated_tokens:,} tokens and"
                f" only {budget.usable:,} are usable (window {budget.window:,}, output reserve"
                f" {budget.output_reserve:,}, margin {budget.margin:,}). Nothing was sent; all work"
                f" is kept in the ledger: resume session {self.session_id} with a larger window."
            )
        if asm.missing:
            raise InvariantError(
                f"tool call(s) {list(asm.missing)} have no result in the ledger; recovery must"
                " record explicit results before the next request"
            )
        check(view.messages, view.estimated_tokens, budget.usable)
        self._last_counted = (self.entries()[-1].seq if self._entries else 0, asm.total_tokens)
        self._send_cap = None
        return view

    def _relieve(self, asm: Assembly, state: ViewState, budget: Budget, estimate: int) -> str:
        """Project or derive, whichever the cost model prices lower; returns the action."""
        plan = plan_projection(asm, self.texts(), self.counter, budget, estimate)
        draft, after = self._draft(state, budget)
        if plan.accepted:
            scale = estimate / max(asm.total_tokens, 1)
            since = state.checkpoint.seq if state.checkpoint else 0
            growth = growth_per_call(asm.parts, since) * scale
            fixed = calibrated(asm.fixed_tokens, self.ratio(), exact=self.counter.exact)
            threshold = budget.threshold
            project = cycle_cost(plan.resent_tokens, plan.after_tokens, threshold, growth)
            derive_ = cycle_cost(after - fixed, after, threshold, growth)
            if project <= derive_:
                append_projection(self.ledger, self.session_id, plan)
                return "projection"
        pressure_guard(self.entries(), budget)
        append_checkpoint(self.ledger, self.session_id, draft, "pressure", estimate, after, budget)
        return "checkpoint"

    def _draft(self, state: ViewState, budget: Budget) -> tuple[Draft, int]:
        """A checkpoint draft for `state` and the estimated request size it leads to."""
        entries = self.entries()
        previous = state.checkpoint.number if state.checkpoint else 0
        asm = self.assemble(state)
        ratio = self.ratio()
        draft = derive(
            previous + 1,
            entries,
            self._conversation(),
            state,
            self.texts(),
            ScaledCounter(self.counter, ratio),
            budget,
            calibrated(asm.fixed_tokens, ratio, exact=self.counter.exact),
            vision=self.settings.vision,
        )
        trial = state_with_draft(state, draft, entries[-1].seq + 1 if entries else 1)
        after, _ = self.estimate(self.assemble(trial), trial)
        return draft, after

    def _derive(self, by: str, before: int, budget: Budget) -> Checkpoint:
        draft, after = self._draft(self.state(), budget)
        return append_checkpoint(self.ledger, self.session_id, draft, by, before, after, budget)

    def compact(self, *, by: str) -> Checkpoint:
        """Derive a checkpoint now (no model call), whatever the pressure.

        Args:
            by: who asked: `user` for people (/compact, `comal compact`), otherwise the
                reason (e.g. `context_window_exceeded`).
        """
        budget = self.budget()
        state = self.state()
        estimate, _ = self.estimate(self.assemble(state), state)
        if by not in USER_TRIGGERS:
            pressure_guard(self.entries(), budget)
        return self._derive(by, estimate, budget)

    def report(self) -> ContextReport:
        """The `/context` rows for the next request (appends nothing)."""
        return context_report(self)

    def checkpoints(self) -> list[Checkpoint]:
        """Every checkpoint of the session, oldest first."""
        return checkpoints(self.entries())

    def pending_compaction(self) -> str | None:
        """Who asked for a derivation not yet done (`compact.requested`), or None."""
        requested: str | None = None
        for entry in self.entries():
            if entry.kind == "compact.requested":
                by = entry.payload.get("by")
                requested = by if isinstance(by, str) else "user"
            elif entry.kind == "checkpoint":
                requested = None
        return requested

    # --- calibration ----------------------------------------------------------------------

    def _record_calibration(self) -> None:
        """Learn measured/counted from the response to the last view this engine prepared."""
        if self._last_counted is None or self.counter.exact:
            return
        prepared_at, counted = self._last_counted
        answered, measured = measured_after(self.entries(), prepared_at)
        if not answered:
            return
        self._last_counted = None
        if measured is None or counted <= 0:
            return
        ratio = measured / counted
        if abs(ratio / self.ratio() - 1) > RECALIBRATE_SHIFT:
            payload = calibration_payload(self.model, ratio, measured, counted, "usage")
            self.ledger.append(self.session_id, "context.calibrated", payload)

    def on_context_length(self, error: ContextLengthError) -> None:
        """Recalibrate from a provider CONTEXT_LENGTH so the next `prepare()` relieves pressure.

        Appends `context.calibrated` (source `context_length`, which also invalidates earlier
        anchors). For "input + max_tokens exceed", the next request also sends only the reserve.
        """
        counted = self._last_counted[1] if self._last_counted else self.assemble().total_tokens
        measured = refused_size(error, self.settings.window_tokens)
        ratio = max(measured / max(counted, 1), self.ratio())
        payload = calibration_payload(self.model, ratio, measured, counted, "context_length")
        self.ledger.append(self.session_id, "context.calibrated", payload)
        if error.fixable_by_output_reserve:
            self._send_cap = self.output_reserve()
