"""The context engine: active memory for the next request, kept within budget.

`prepare()` is called before every model call (so pressure is checked after every batch of tool
results, not only at turn starts). It reads the ledger, builds the view, and under pressure
appends a `projection` (stage 1) or a `checkpoint` (stage 2) entry before returning the view
to send. Every decision is an entry, and the view is a pure function of the entries, so a
resumed session rebuilds byte-identical requests.

The engine is a façade: it holds the caches (what `reading.py` has read of the session and
folded from it, the incremental view builder, memoized counts) and wires the rooms together.
What is measured is measured in `measure/` (budget, reserve, calibration, anchors), the view is
built in `view/`, and every pressure decision is made in `relief/` from plain values
(`ReliefInputs`) the engine gathers; the engine appends what the decision returns. `/context`
renders from `snapshot()` (`report.py`).

Invariants:
- `prepare()` never returns a view that does not fit: it raises `ContextOverheadError` when the
  fixed parts alone cannot fit, and `ContextPressureLoopError` when derivations stop making
  progress (never more than two without progress) or even a minimal checkpoint cannot fit.
- Between pressure events the request only grows by appending.
- No model is ever called to shrink the context.
- A person's compaction (`/compact`, `comal compact`, now or queued) is derived only when it
  makes the view smaller; otherwise it is refused with its figures and recorded as
  `compact.cancelled`, and the view stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, assert_never

from comal.context.measure.anchors import (
    Anchor,
    Fingerprint,
    calibration_ratio,
    tools_digest,
)
from comal.context.measure.budget import (
    Budget,
    EngineSettings,
    check_grown_reserve,
    check_overhead,
    default_margin,
    max_output,
    no_fit_message,
    reserve_room,
    size_output_reserve,
    soft_limit_tokens,
)
from comal.context.measure.calibration import (
    PROVIDER_WINDOW_SOURCE,
    context_length_record,
    provider_window,
    server_count_record,
    usage_calibration,
)
from comal.context.measure.tokens import (
    MemoCounter,
    TokenCounter,
    calibrated,
    counter_for_model,
    upper_bound,
)
from comal.context.measure.unfinished import (
    OUTPUT_LENGTH,
    WINDOW_FULL,
    Discarded,
    ModelReply,
    append_discarded,
)
from comal.context.reading import SessionReader
from comal.context.relief.decisions import append_checkpoint, append_projection, refuse_compaction
from comal.context.relief.deferral import DEFERRED_KIND, deferred_since, record_deferral
from comal.context.relief.inputs import ReliefInputs
from comal.context.relief.recorded import (
    Checkpoint,
    checkpoints,
    pending_compaction,
    view_state,
)
from comal.context.relief.relieve import (
    CheckpointChoice,
    CompactionRefusal,
    ProjectionChoice,
    compaction,
    deepest,
    relieve_media,
)
from comal.context.relief.triggers import Deferred, pressure_step
from comal.context.report import ContextReport, context_report
from comal.context.snapshot import EngineSnapshot
from comal.context.view.build import (
    Assembly,
    FixedParts,
    PreparedView,
    ResultTexts,
    ViewBuilder,
    ViewState,
    build_view,
    plugin_schema_tokens,
    schema_tokens,
)
from comal.context.view.conversation import Block
from comal.context.view.entry import DEFAULT_LARGE_OUTPUT_BYTES, whole_limit
from comal.context.view.invariants import PairChecker, check
from comal.context.view.media import append_media_projection, media_budget
from comal.context.view.rendering import preview_chars
from comal.errors import (
    CompactNotSmallerError,
    ContextLengthError,
    ContextOverheadError,
    ContextPressureLoopError,
    InvariantError,
)
from comal.ids import now_ms
from comal.ledger.entry import Entry
from comal.ledger.records import Kind
from comal.ledger.store import Ledger
from comal.messages import Finish, TextPart

T = TypeVar("T")
_AFTER_FIRST_REQUEST = frozenset(
    {
        Kind.PROVIDER_REQUEST,
        Kind.MESSAGE_ASSISTANT,
        Kind.TOOL_RESULT,
        Kind.PROJECTION,
        Kind.CHECKPOINT,
        Kind.COMPACT_REQUESTED,
        Kind.CONTEXT_CALIBRATED,
    }
)
"""Kinds that end the first request's decision by bounds (a request was made, or a decision or
measurement the bounds do not account for is recorded)."""
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
        clock: milliseconds now (idle time against the prompt cache's time-to-live).
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
        clock: Callable[[], int] = now_ms,
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
        self._texts: tuple[int, ResultTexts] | None = None
        self._last_counted: tuple[int, int] | None = None
        self._send_cap: int | None = None
        self._clock = clock
        self._reader = SessionReader(ledger, session_id)
        self._restarts = 0
        self._builder = ViewBuilder()
        self._pairs = PairChecker()

    def entries(self) -> list[Entry]:
        """The session's entries, read incrementally from the ledger."""
        entries = self._reader.entries()
        if self._reader.restarts != self._restarts:
            # A conversation rewind (the TUI's /rewind keeps the engine): the reader started
            # over, and so does the view built by extension, or it would still show the turns
            # the rewind went over.
            self._restarts = self._reader.restarts
            self._builder = ViewBuilder()
            self._pairs = PairChecker()
        return entries

    def _of_kinds(self, *kinds: str) -> list[Entry]:
        return self._reader.of_kinds(*kinds)

    def _at_last_seq(self, name: str, compute: Callable[[], T]) -> T:
        self.entries()
        return self._reader.at_last_seq(name, compute)

    def conversation(self) -> list[Block]:
        """The conversation blocks of the session, rebuilt only when the ledger grew."""
        self.entries()
        return self._reader.blocks()

    def window(self) -> tuple[int, str]:
        """(window tokens, source) in force: the configured window, or the smaller limit a
        provider stated in a CONTEXT_LENGTH refusal (recorded, so resumes see it too)."""
        configured = self.settings.window_tokens
        tokens, limited = self._at_last_seq(
            "window",
            lambda: provider_window(
                self._of_kinds(Kind.CONTEXT_CALIBRATED), self.model, configured
            ),
        )
        return tokens, PROVIDER_WINDOW_SOURCE if limited else self.settings.window_source

    def budget(self) -> Budget:
        """The budget for the next request."""
        window = self.window()[0]
        return Budget(
            window,
            self.output_reserve(),
            self.margin(window),
            self.settings.threshold_ratio,
            soft_limit_tokens(self.settings.soft_limit, window),
        )

    def texts(self) -> ResultTexts:
        """Memoized result renderings for this engine's settings."""
        return self._texts_for(self.window()[0])

    def _texts_for(self, window: int) -> ResultTexts:
        if self._texts is None or self._texts[0] != window:
            usable = window - 4_096 - default_margin(window)
            configured = self.settings.large_output_threshold_bytes
            texts = ResultTexts(
                self.ledger,
                DEFAULT_LARGE_OUTPUT_BYTES if configured is None else configured,
                preview_chars(usable),
                whole_tokens=whole_limit(usable) if configured is None else 0,
                counter=self.counter,
            )
            self._texts = (window, texts)
        return self._texts[1]

    def state(self) -> ViewState:
        """Projections and the checkpoint in force."""
        return self._at_last_seq(
            "state", lambda: view_state(self._of_kinds(Kind.PROJECTION, Kind.CHECKPOINT))
        )

    def assemble(self, state: ViewState | None = None) -> Assembly:
        """Build the view for `state` (default: the recorded one).

        The recorded state's view is built incrementally (`ViewBuilder`: between events it
        only grows by appending); trial states of a pressure decision are built whole.
        """
        blocks = self.conversation()
        recorded = self.state()
        build = build_view
        if state is None or state is recorded or state == recorded:
            state, build = recorded, self._builder.build
        return build(
            blocks, state, self.fixed, self.texts(), self.counter, vision=self.settings.vision
        )

    def ratio(self) -> float:
        """The calibration ratio in force for this model."""
        return self._at_last_seq(
            "ratio", lambda: calibration_ratio(self._of_kinds(Kind.CONTEXT_CALIBRATED), self.model)
        )

    def estimate(self, asm: Assembly, state: ViewState) -> tuple[int, bool]:
        """(estimated input tokens, whether the base is measured) for an assembled view."""
        ratio = self.ratio()
        anchor = self._anchor(state.checkpoint.number if state.checkpoint else None)
        return asm.estimate(anchor, ratio, exact=self.counter.exact)

    def _anchor(self, checkpoint: int | None) -> Anchor | None:
        """The anchor for a request under checkpoint number `checkpoint` (None: no checkpoint)."""
        self.entries()
        return self._reader.anchors.find(self.fingerprint.with_checkpoint(checkpoint))

    def output_reserve(self) -> int:
        """The output reserve for the next request: sized from the session's recorded outputs,
        within the model's maximum, the configured maximum and what the window leaves."""
        window = self.window()[0]
        room = reserve_room(window, self.fixed_tokens(), self.margin(window))
        return self._at_last_seq(
            "reserve",
            lambda: size_output_reserve(
                self._reader.outputs,
                self._reader.truncated,
                max_output=self.settings.max_output_tokens,
                configured=self.settings.output_reserve_tokens,
                room=room,
            ),
        )

    def margin(self, window: int) -> int:
        """The safety margin for `window` (configured, or 1/16 of it)."""
        margin = self.settings.margin_tokens
        return default_margin(window) if margin is None else margin

    def fixed_tokens(self) -> int:
        """System prompt, instructions and tool schemas as the budget counts them (calibrated)."""
        fixed = self.fixed
        counted = (
            self.counter.count(fixed.system)
            + self.counter.count(fixed.instructions)
            + schema_tokens(fixed.all_tools, self.counter)
        )
        return calibrated(counted, self.ratio(), exact=self.counter.exact)

    def grow_output_reserve(self) -> int:
        """The larger reserve after an OUTPUT_LENGTH (call after `response.discarded`).

        Raises:
            OutputLengthError: the reserve that overflowed was already the largest possible.
        """
        self.entries()
        truncated = list(self._reader.truncated)
        new = self.output_reserve()
        last = truncated[-1] if truncated else 0
        window = self.window()[0]
        # The cut reply had all the window left beside the context; a larger one needs a
        # smaller context, which the next prepare() relieves to (the larger reserve lowers the
        # threshold). Beside the deepest cut a checkpoint could make it must still fit, or the
        # cut reply would only turn into a pressure loop.
        state = self.state()
        asm = self.assemble(state)
        floor = deepest(self._inputs(self.budget(), state, asm))
        beside = window - self.margin(window) - floor
        room = reserve_room(window, self.fixed_tokens(), self.margin(window))
        check_grown_reserve(new, last, beside, room, window, self.settings, self._reader.read())
        return new

    def on_unfinished(self, reply: ModelReply, reserve: int) -> Discarded | None:
        """Recover from a reply that stopped before it finished; None for one that finished.

        An unfinished reply is recorded as `response.discarded` (none of its calls run). After
        OUTPUT_LENGTH the output reserve grows: the cut request had asked for all the window
        left beside it (`max_output`), so the larger reserve lowers the threshold and the next
        request is relieved to make room; after a full window a checkpoint is derived now.

        Args:
            reply: the model's answer.
            reserve: the output reserve its request was sent with.

        Raises:
            OutputLengthError: the reserve that overflowed was already the largest possible.
        """
        finish = reply.finish
        match finish:
            case Finish.LENGTH:
                append_discarded(self.ledger, self.session_id, reply, OUTPUT_LENGTH, reserve)
                return Discarded(OUTPUT_LENGTH, self.grow_output_reserve())
            case Finish.CONTEXT_WINDOW_EXCEEDED:
                append_discarded(self.ledger, self.session_id, reply, WINDOW_FULL, reserve)
                self.compact(by="context_window_exceeded")
                return Discarded(WINDOW_FULL, reserve)
            case (
                Finish.STOP
                | Finish.TOOL_CALLS
                | Finish.CONTENT_FILTER
                | Finish.REFUSAL
                | Finish.PAUSE
                | Finish.UNKNOWN
            ):
                return None
            case _:
                assert_never(finish)

    def view(self) -> PreparedView:
        """The current view, appending nothing (no invariant check)."""
        state = self.state()
        asm = self.assemble(state)
        return self._prepared(asm, state, self.budget(), ())

    def _prepared(
        self,
        asm: Assembly,
        state: ViewState,
        budget: Budget,
        actions: tuple[str, ...],
        refusal: str | None = None,
    ) -> PreparedView:
        estimate, measured = self.estimate(asm, state)
        send = max_output(budget, estimate, self.settings)
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
            compact_refused=refusal,
        )

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
        fixed = calibrated(asm.fixed_tokens, self.ratio(), exact=self.counter.exact)
        check_overhead(asm, budget, fixed, self.settings.max_output_tokens)
        inputs = self._inputs(budget, state, asm)
        actions: list[str] = []
        refusal: str | None = None
        requested = self.pending_compaction()
        if requested is not None:
            try:
                self._compact(inputs, requested, queued=True)
                actions.append("checkpoint")
            except CompactNotSmallerError as exc:
                # The queued request is dropped (recorded); pressure is judged as usual.
                refusal = exc.message
                requested = None
                inputs = self._inputs(budget, state, asm)
        if requested is None:
            media = relieve_media(inputs)
            if media is not None:
                append_media_projection(
                    self.ledger, self.session_id, media.ids, media.reason, media.before, media.after
                )
                actions.append(media.reason)
                state = self.state()
                inputs = self._inputs(budget, state, self.assemble(state))
            action = self._record(inputs, pressure_step(inputs))
            if action is not None:
                actions.append(action)
        if actions:
            state = self.state()
            asm = self.assemble(state)
        view = self._prepared(asm, state, budget, tuple(actions), refusal)
        if view.estimated_tokens > budget.usable:
            raise ContextPressureLoopError(
                no_fit_message(view.estimated_tokens, budget, self.session_id)
            )
        if asm.missing:
            raise InvariantError(
                f"tool call(s) {list(asm.missing)} have no result in the ledger; recovery must"
                " record explicit results before the next request"
            )
        check(view.messages, view.estimated_tokens, budget.usable, self._pairs)
        entries = self.entries()
        self._last_counted = (entries[-1].seq if entries else 0, asm.total_tokens)
        self._send_cap = None
        return view

    def bounded_first_view(self) -> PreparedView | None:
        """The session's first request decided from upper bounds of its counts, or None.

        Before any request was made, a view whose bounded counts (`measure/tokens.py`
        `UpperBound`: no vocabulary is loaded) show that the fixed parts fit, that its estimate
        is under the target (no pressure event, early or not, is due) and that the request
        asks for the largest output it may, is the view `prepare()` returns: exact counts are
        no larger, so they decide each question the same way, and the messages do not depend
        on counts without a result, a checkpoint or a projection to size. Only its estimate
        is a bound: the caller records `prepare()`'s (appending nothing, as decided). None
        when the bounds do not decide, or the session is past its first request.
        """
        bound = upper_bound(self.counter)
        if bound is None or any(e.kind in _AFTER_FIRST_REQUEST for e in self.entries()):
            return None
        probe = ContextEngine(
            self.ledger,
            self.session_id,
            self.settings,
            self.fixed,
            model=self.model,
            counter=bound,
            fingerprint=self.fingerprint,
            clock=self._clock,
        )
        budget = probe.budget()
        settings = self.settings
        unbounded = size_output_reserve(
            (),
            (),
            max_output=settings.max_output_tokens,
            configured=settings.output_reserve_tokens,
        )
        state = probe.state()
        asm = probe.assemble(state)
        if budget.output_reserve != unbounded or asm.missing or state != ViewState():
            return None
        if any(not isinstance(p, TextPart) for m in asm.messages for p in m.parts):
            return None
        try:
            fixed = calibrated(asm.fixed_tokens, probe.ratio(), exact=bound.exact)
            check_overhead(asm, budget, fixed, settings.max_output_tokens)
        except ContextOverheadError:
            return None
        view = probe._prepared(asm, state, budget, ())
        cap = settings.max_output_tokens
        if settings.output_reserve_tokens is not None:
            cap = min(cap, settings.output_reserve_tokens)
        if view.estimated_tokens > budget.target or view.output_reserve != cap:
            return None
        return view

    def _inputs(self, budget: Budget, state: ViewState, asm: Assembly) -> ReliefInputs:
        """The plain values a pressure decision reads (`relief/inputs.py`), gathered after
        one read of the ledger (the scans below are of what it read; `budget` was just
        computed, so its window is the one in force). They are used at once:
        after the engine appends anything, it gathers them again."""
        ratio = self.ratio()  # reads the ledger's new entries first
        entries = self._reader.read()
        number = state.checkpoint.number if state.checkpoint else 0
        anchor = self._reader.anchors.find(self.fingerprint.with_checkpoint(number or None))
        events = self._of_kinds(Kind.PROJECTION, Kind.CHECKPOINT)
        last_event = events[-1].seq if events else 0
        return ReliefInputs(
            budget=budget,
            state=state,
            asm=asm,
            estimate=asm.estimate(anchor, ratio, exact=self.counter.exact)[0],
            entries=entries,
            blocks=self._reader.blocks(),
            fixed=self.fixed,
            texts=self._texts_for(budget.window),
            counter=self.counter,
            ratio=ratio,
            anchor=anchor,
            next_anchor=self._reader.anchors.find(self.fingerprint.with_checkpoint(number + 1)),
            vision=self.settings.vision,
            media_budget_tokens=media_budget(budget.window, self.settings.media_budget_tokens),
            cache_ttl_s=self.settings.cache_ttl_s,
            now_ms=self._clock(),
            last_event_seq=last_event,
            deferred=deferred_since(self._of_kinds(DEFERRED_KIND), last_event),
            index=self._reader.index,
        )

    def relief_inputs(self) -> ReliefInputs:
        """What a pressure decision on the recorded view would read now (appends nothing)."""
        state = self.state()
        return self._inputs(self.budget(), state, self.assemble(state))

    def _record(
        self,
        inputs: ReliefInputs,
        outcome: ProjectionChoice | CheckpointChoice | Deferred | None,
    ) -> str | None:
        """Append what the decision on `inputs` chose; returns the action (None: no event)."""
        budget = inputs.budget
        match outcome:
            case None:
                return None
            case Deferred(found, growth, now):
                if now is not None:
                    args = (budget, inputs.estimate, growth, found, now)
                    record_deferral(self.ledger, self.session_id, *args)
                return None
            case ProjectionChoice(plan, trigger, options):
                append_projection(self.ledger, self.session_id, plan, trigger, options)
                return "projection"
            case CheckpointChoice():
                self._append_checkpoint(outcome, budget)
                return "checkpoint"
            case _:
                assert_never(outcome)

    def _append_checkpoint(self, choice: CheckpointChoice, budget: Budget) -> Checkpoint:
        return append_checkpoint(
            self.ledger,
            self.session_id,
            choice.draft,
            choice.trigger,
            choice.before,
            choice.after,
            budget,
            options=choice.options,
        )

    def _compact(self, inputs: ReliefInputs, by: str, *, queued: bool = False) -> Checkpoint:
        """Derive and record a checkpoint asked for by `by` (`relieve.compaction`).

        Raises:
            CompactNotSmallerError: a person asked and the checkpoint would not shrink the
                view (the refusal is recorded as `compact.cancelled` with its figures).
        """
        choice = compaction(inputs, by, queued=queued)
        if isinstance(choice, CompactionRefusal):
            raise refuse_compaction(self.ledger, self.session_id, by, choice.before, choice.after)
        return self._append_checkpoint(choice, inputs.budget)

    def compact(self, *, by: str) -> Checkpoint:
        """Derive a checkpoint now (no model call), whatever the pressure.

        Args:
            by: who asked: `user` for people (/compact, `comal compact`), otherwise the
                reason (e.g. `context_window_exceeded`).

        Raises:
            CompactNotSmallerError: a person asked and the view would not get smaller.
            ContextPressureLoopError: an automatic derivation after two without progress.
        """
        return self._compact(self.relief_inputs(), by)

    def snapshot(self) -> EngineSnapshot:
        """The next request's figures as plain values (appends nothing)."""
        budget = self.budget()
        state = self.state()
        asm = self.assemble(state)
        used, measured = self.estimate(asm, state)
        return EngineSnapshot(
            session_id=self.session_id,
            model=self.model,
            counter_name=self.counter.name,
            counter_exact=self.counter.exact,
            budget=budget,
            window_source=self.window()[1],
            state=state,
            asm=asm,
            used_tokens=used,
            used_measured=measured,
            ratio=self.ratio(),
            anchor=self._anchor(state.checkpoint.number if state.checkpoint else None),
            checkpoints=tuple(self.checkpoints()),
            pending_compaction=self.pending_compaction() is not None,
            media_budget_tokens=media_budget(budget.window, self.settings.media_budget_tokens),
            plugin_schema_tokens=plugin_schema_tokens(self.fixed, self.counter),
        )

    def report(self) -> ContextReport:
        """The `/context` rows for the next request (appends nothing)."""
        return context_report(self.snapshot())

    def checkpoints(self) -> list[Checkpoint]:
        """Every checkpoint of the session, oldest first."""
        return checkpoints(self.entries())

    def pending_compaction(self) -> str | None:
        """Who asked for a derivation not yet done (`compact.requested`), or None."""
        return self._at_last_seq(
            "pending",
            lambda: pending_compaction(
                self._of_kinds(Kind.COMPACT_REQUESTED, Kind.COMPACT_CANCELLED, Kind.CHECKPOINT)
            ),
        )

    def _record_calibration(self) -> None:
        """Learn measured/counted from the response to the last view this engine prepared."""
        if self._last_counted is None or self.counter.exact:
            return
        record = usage_calibration(self.entries(), self._last_counted, self.model, self.ratio())
        if record is None:
            return
        self._last_counted = None
        if record is not False:
            self.ledger.append_record(self.session_id, record)

    def on_server_count(self, measured: int, counted: int) -> bool:
        """Calibrate from the server's exact count of a request this engine assembled.

        A count is a measurement, so the ratio follows it up or down; nothing is recorded
        when it moves the ratio by 5 % or less.

        Returns:
            Whether a `context.calibrated` entry (source `server_count`) was appended.
        """
        record = server_count_record(self.model, measured, counted, self.ratio())
        if record is None:
            return False
        self.ledger.append_record(self.session_id, record)
        return True

    def on_context_length(self, error: ContextLengthError) -> None:
        """Recalibrate from a provider CONTEXT_LENGTH so the next `prepare()` relieves pressure.

        Appends `context.calibrated` (source `context_length`, which also invalidates earlier
        anchors). A limit the error states below the window in force is recorded as
        `limit_tokens`: from then on the budget uses it as the window, so the next `prepare()`
        projects or derives to fit the provider's real window. For "input + max_tokens
        exceed", the next request also sends only the reserve.
        """
        counted = self._last_counted[1] if self._last_counted else self.assemble().total_tokens
        window = self.window()[0]
        record = context_length_record(self.model, error, counted, window, self.ratio())
        self.ledger.append_record(self.session_id, record)
        if error.fixable_by_output_reserve:
            self._send_cap = self.output_reserve()
