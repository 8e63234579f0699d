"""`/context` and `comal context`: where the window goes, row by row.

Rows: system prompt, custom instructions, native tools, plugin tools, MCP tools, media,
checkpoint, conversation, free space, and the buffer (output reserve + margin), each with its
share. The component rows add up to `used` exactly (the conversation row takes the difference
between local counts and a measured total), and the shares to exactly 100 % — of the window, or
of history + buffer when those exceed it, which the report then says. Then the media reserve
(and how many results show their images by reference) and the loaded plugins with their schema
tokens. The total used is *measured* when a valid anchor exists (provider-measured input of a
recent request plus an estimate of what came after), otherwise `~` estimated; component rows are
local counts (exact tokenizer or calibrated estimate) and say so. Unknown is never shown as 0.
A line says what child sessions' receipts cost inside the conversation (their own work
stayed in their own windows).

The report renders from a frozen `EngineSnapshot` (`engine.snapshot()`): plain values, no
engine, no ledger reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from comal.context.measure.tokens import calibrated
from comal.context.snapshot import EngineSnapshot
from comal.ledger.records import ToolResult
from comal.messages import JSONObject

CHILD_TOOLS = frozenset({"Task", "WorkStepRun", "WorkDraft"})
"""Tools whose results are child sessions' receipts (the children's own windows are theirs)."""


@dataclass(frozen=True, slots=True)
class ReportRow:
    """One line of the report."""

    name: str
    tokens: int
    percent: float
    measured: bool


@dataclass(frozen=True, slots=True)
class ContextReport:
    """The budget of a session's next request."""

    session: str
    model: str
    counter: str
    counter_exact: bool
    window_tokens: int
    window_source: str
    used_tokens: int
    used_measured: bool
    threshold_tokens: int
    usable_tokens: int
    output_reserve: int
    margin: int
    rows: tuple[ReportRow, ...]
    anchor: str
    projected_items: int
    checkpoint_count: int
    latest_checkpoint: str | None
    pending_compaction: bool
    child_receipts: int = 0
    """Results of child-running calls in the view."""
    child_receipt_tokens: int = 0
    """What those receipts cost this window (part of the conversation row)."""
    over_window_tokens: int = 0
    """How far history + buffer exceed the window (0 when they fit); shares are then of
    their total, so they still add to 100 %."""
    media_budget_tokens: int = 0
    """The media reserve (images shown as pixels must fit it)."""
    media_by_reference: int = 0
    """Results whose images are shown by reference (reserve or pressure)."""
    plugins: tuple[tuple[str, int], ...] = ()
    """(plugin, schema tokens) of each loaded plugin."""
    measured_tokens: int | None = None
    """Input tokens the server counted for the last measured request (None: none is valid)."""

    def to_json(self) -> JSONObject:
        """The `--json` object."""
        return {
            "session": self.session,
            "model": self.model,
            "counter": {"name": self.counter, "exact": self.counter_exact},
            "window": {"tokens": self.window_tokens, "source": self.window_source},
            "used": {"tokens": self.used_tokens, "measured": self.used_measured},
            "threshold_tokens": self.threshold_tokens,
            "usable_tokens": self.usable_tokens,
            "output_reserve": self.output_reserve,
            "margin": self.margin,
            "rows": [
                {"name": r.name, "tokens": r.tokens, "percent": r.percent, "measured": r.measured}
                for r in self.rows
            ],
            "anchor": self.anchor,
            "projected_items": self.projected_items,
            "checkpoints": self.checkpoint_count,
            "latest_checkpoint": self.latest_checkpoint,
            "pending_compaction": self.pending_compaction,
            "child_receipts": {"count": self.child_receipts, "tokens": self.child_receipt_tokens},
            "over_window_tokens": self.over_window_tokens,
            "media": {
                "budget_tokens": self.media_budget_tokens,
                "by_reference": self.media_by_reference,
            },
            "plugins": [{"name": n, "schema_tokens": t} for n, t in self.plugins],
        }

    def receipts_line(self) -> str | None:
        """What the children's receipts cost the conversation (None: no receipt in view); the
        plain form and the TUI's `/context` both show it."""
        if not self.child_receipts:
            return None
        return (
            f"Child receipts: {self.child_receipts} in view, ~{self.child_receipt_tokens:,}"
            " tokens of the conversation (each child's own work stayed in its own window)"
        )

    def render(self) -> str:
        """Plain-text form."""
        used = f"{self.used_tokens:,}" if self.used_measured else f"~{self.used_tokens:,}"
        base = "counted by the server" if self.used_measured else "estimated"
        kind = "exact" if self.counter_exact else "estimate, calibrated"
        lines = [
            f"Context of session {self.session}",
            f"Model {self.model} · counting {self.counter} ({kind})",
            f"Window {self.window_tokens:,} tokens ({self.window_source}) · used {used} ({base})"
            f" · automatic threshold {self.threshold_tokens:,}",
        ]
        if self.over_window_tokens:
            lines.append(
                f"History exceeds this window by ~{self.over_window_tokens:,} tokens (with the"
                " buffer): the next request relieves pressure first; shares are of the total"
            )
        width = max(len(r.name) for r in self.rows)
        for r in self.rows:
            mark = "" if r.measured else "~"
            amount = f"{mark}{r.tokens:,}"
            lines.append(f"  {r.name:<{width}}  {amount:>10}  {r.percent:5.1f}%")
        if self.measured_tokens is None:
            lines.append(
                "Not yet counted by the server since the prompt, tools or settings last changed:"
                " the figures are estimates"
            )
        else:
            lines.append(
                f"The server counted {self.measured_tokens:,} input tokens in the last request;"
                f" ~{max(0, self.used_tokens - self.measured_tokens):,} estimated since"
            )
        cp = f", latest: {self.latest_checkpoint}" if self.latest_checkpoint else ""
        lines.append(
            f"Projected results: {self.projected_items} · checkpoints: {self.checkpoint_count}{cp}"
        )
        media = next((r.tokens for r in self.rows if r.name == "Media"), 0)
        lines.append(
            f"Media reserve: {media:,} of {self.media_budget_tokens:,} tokens in view · "
            f"{self.media_by_reference} shown by reference"
        )
        if self.plugins:
            listed = ", ".join(
                f"{name} (~{tokens:,} schema tokens)" for name, tokens in self.plugins
            )
            lines.append(f"Plugins loaded: {listed}")
        receipts = self.receipts_line()
        if receipts is not None:
            lines.append(receipts)
        if self.pending_compaction:
            lines.append("A compaction was requested; it runs at the next turn boundary.")
        return "\n".join(lines)


def reconcile(parts: list[int], total: int) -> list[int]:
    """`parts` (local counts) adjusted to sum to `total` (what `used` says, maybe measured).

    The last part (the conversation) takes the difference; when the others alone exceed the
    total, all are scaled down in proportion (largest remainders keep the sum exact).
    """
    fixed = sum(parts[:-1])
    if fixed <= total:
        return [*parts[:-1], total - fixed]
    whole = sum(parts)
    return _apportion([p * total / whole for p in parts], total) if whole else parts


def shares_of(tokens: list[int]) -> list[float]:
    """Each row's share in percent, one decimal, summing to exactly 100.0 (largest remainder)."""
    whole = sum(tokens)
    if whole <= 0:
        return [0.0 for _ in tokens]
    tenths = _apportion([1000 * t / whole for t in tokens], 1000)
    return [t / 10 for t in tenths]


def _apportion(exact: list[float], total: int) -> list[int]:
    floors = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: exact[i] - floors[i], reverse=True)
    for i in order[: total - sum(floors)]:
        floors[i] += 1
    return floors


def context_report(snap: EngineSnapshot) -> ContextReport:
    """The report for the next request a snapshot describes."""
    budget, state, asm = snap.budget, snap.state, snap.asm
    used, measured = snap.used_tokens, snap.used_measured
    ratio = snap.ratio
    exact = snap.counter_exact
    window = budget.window

    def scaled(tokens: int) -> int:
        return calibrated(tokens, ratio, exact=exact)

    media = asm.tokens_of("media")
    checkpoint = asm.tokens_of("checkpoint")
    conversation = scaled(asm.conversation_tokens) - scaled(media) - scaled(checkpoint)
    buffer = budget.output_reserve + budget.margin
    parts = [
        ("System prompt", scaled(asm.system_tokens)),
        ("Custom instructions", scaled(asm.instructions_tokens)),
        ("Native tools", scaled(asm.tools_tokens)),
        ("Plugin tools", scaled(asm.plugin_tokens)),
        ("MCP tools", scaled(asm.mcp_tokens)),
        ("Media", scaled(media)),
        ("Checkpoint", scaled(checkpoint)),
        ("Conversation", max(conversation, 0)),
    ]
    tokens = reconcile([t for _, t in parts], used)
    named = [(name, t, False) for (name, _), t in zip(parts, tokens, strict=True)]
    named.append(("Free space", max(window - used - buffer, 0), False))
    named.append(("Buffer (output reserve + margin)", buffer, True))
    shares = shares_of([t for _, t, _ in named])
    rows = tuple(
        ReportRow(name, t, share, is_measured)
        for (name, t, is_measured), share in zip(named, shares, strict=True)
    )
    receipts = [
        p
        for p in asm.parts
        if p.role == "result"
        and p.kind != "media"
        and p.result is not None
        and ToolResult.from_entry(p.result.entry).name in CHILD_TOOLS
    ]
    anchor = snap.anchor
    if anchor is not None:
        anchor_text = (
            f"measured {anchor.measured_tokens:,} input tokens for request {anchor.request_id};"
            f" ~{used - anchor.measured_tokens:,} estimated since"
        )
    else:
        anchor_text = "none valid (no measured request under the current fingerprint)"
    cps = snap.checkpoints
    latest = f"#{cps[-1].number} {cps[-1].title}" if cps else None
    return ContextReport(
        session=snap.session_id,
        model=snap.model,
        counter=snap.counter_name,
        counter_exact=exact,
        window_tokens=window,
        window_source=snap.window_source,
        used_tokens=used,
        used_measured=measured,
        threshold_tokens=budget.threshold,
        usable_tokens=budget.usable,
        output_reserve=budget.output_reserve,
        margin=budget.margin,
        rows=rows,
        anchor=anchor_text,
        measured_tokens=None if anchor is None else anchor.measured_tokens,
        projected_items=len(state.projected),
        checkpoint_count=len(cps),
        latest_checkpoint=latest,
        pending_compaction=snap.pending_compaction,
        child_receipts=len(receipts),
        child_receipt_tokens=scaled(sum(p.tokens for p in receipts)),
        over_window_tokens=max(used + buffer - window, 0),
        media_budget_tokens=snap.media_budget_tokens,
        media_by_reference=len(state.media_projected),
        plugins=tuple((name, scaled(t)) for name, t in snap.plugin_schema_tokens),
    )
