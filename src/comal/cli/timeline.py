"""The context timeline: each model call's tokens, stacked by component, against the window.

Each bar is one response (`message.assistant` or `response.discarded`), in order: the input
the provider measured split into cache read, cache write and new input, then the output. A
response whose input was not reported stands on Comal's recorded estimate of its request,
drawn hatched. The window and the pressure threshold are lines — the threshold `comal context`
reports (`threshold_tokens`: the window's share less the output reserve and margin), so the
picture and the report agree; each projection, checkpoint and peer summary is a vertical mark
labelled with what it freed (its before → after tokens). Labels sit in a band above the window
line, each in the first row where it overlaps no other, and the legend below the axes, so no
text covers another (`label_rows`).

matplotlib is imported only when a picture is drawn, so the CLI starts without it.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from comal.errors import ConfigError, missing_extra
from comal.ledger.entry import Entry
from comal.ledger.records import (
    AssistantMessage,
    CheckpointRecord,
    Kind,
    ProjectionRecord,
    ProviderRequest,
    ResponseDiscardedRecord,
    SummaryMessage,
    record_of,
)
from comal.usage import Usage

COMPONENTS = ("cache read", "cache write", "new input", "output")
COLORS = ("#8fb8de", "#f2c078", "#4a78b5", "#d1495b")
FORMATS = (".png", ".svg")


@dataclass(frozen=True, slots=True)
class CallTokens:
    """One response's tokens by component."""

    index: int
    seq: int
    cache_read: int
    cache_write: int
    new_input: int
    output: int
    estimated: bool


@dataclass(frozen=True, slots=True)
class ContextMark:
    """A context event placed before the call it precedes."""

    index: int
    kind: str
    label: str
    freed: int | None


@dataclass(frozen=True, slots=True)
class Timeline:
    """Everything the picture shows."""

    calls: tuple[CallTokens, ...]
    marks: tuple[ContextMark, ...]
    window: int
    threshold: int


def _freed(before: int | None, after: int | None) -> tuple[int | None, str]:
    freed = before - after if before is not None and after is not None else None
    return freed, f" −{freed:,}" if freed is not None else ""


def _mark(entry: Entry, index: int) -> ContextMark | None:
    match record_of(entry):
        case ProjectionRecord(result_ids=ids, before_tokens=before, after_tokens=after):
            freed, text = _freed(before, after)
            return ContextMark(index, "projection", f"projection {len(ids)} refs{text}", freed)
        case CheckpointRecord(number=number, before_tokens=before, after_tokens=after):
            freed, text = _freed(before, after)
            return ContextMark(index, "checkpoint", f"checkpoint #{number}{text}", freed)
        case SummaryMessage():
            return ContextMark(index, "summary", "peer compaction", None)
        case _:
            return None


def timeline_of(entries: Sequence[Entry], window: int, threshold: int) -> Timeline:
    """The timeline of a session's history.

    Args:
        entries: the session's history.
        window: the context window, in tokens.
        threshold: the pressure threshold, in tokens (the context report's `threshold_tokens`).
    """
    estimates: dict[str, int] = {}
    calls: list[CallTokens] = []
    marks: list[ContextMark] = []
    for entry in entries:
        if entry.kind == Kind.PROVIDER_REQUEST:
            estimates[entry.id] = ProviderRequest.from_entry(entry).estimated_input_tokens or 0
            continue
        mark = _mark(entry, len(calls))
        if mark is not None:
            marks.append(mark)
            continue
        if entry.kind not in (Kind.MESSAGE_ASSISTANT, Kind.RESPONSE_DISCARDED):
            continue
        reply = (
            AssistantMessage if entry.kind == Kind.MESSAGE_ASSISTANT else ResponseDiscardedRecord
        ).from_entry(entry)
        usage = Usage() if reply.usage is None else Usage.from_json(reply.usage)
        estimated = usage.new_input is None
        new_input = (
            usage.new_input
            if usage.new_input is not None
            else estimates.get(reply.request_entry or "", 0)
        )
        calls.append(
            CallTokens(
                len(calls),
                entry.seq,
                usage.cache_read or 0,
                usage.cache_write or 0,
                new_input,
                usage.output or 0,
                estimated,
            )
        )
    return Timeline(
        tuple(calls),
        tuple(_with_drop(m, calls) for m in marks),
        window,
        threshold,
    )


def _total(call: CallTokens) -> int:
    return call.cache_read + call.cache_write + call.new_input


def _with_drop(mark: ContextMark, calls: Sequence[CallTokens]) -> ContextMark:
    """A peer's summary records no sizes: what it freed is the drop of input across it."""
    if mark.freed is not None or not 0 < mark.index < len(calls):
        return mark
    freed = _total(calls[mark.index - 1]) - _total(calls[mark.index])
    return ContextMark(mark.index, mark.kind, f"{mark.label} −{freed:,}", freed)


LABEL_POINTS = 8
"""Font size of the marks' labels."""
CHAR_INCHES = 0.62 * LABEL_POINTS / 72
"""A label character's width, generously (DejaVu Sans averages about 0.55 em)."""


def label_rows(xs: Sequence[float], widths: Sequence[float]) -> list[int]:
    """The row of each label, so that labels of one row never overlap.

    Args:
        xs: where each label starts, in order of x.
        widths: each label's width, in the same unit.

    Returns:
        For each label, the lowest row whose last label ends before it starts.
    """
    ends: list[float] = []
    rows: list[int] = []
    for x, width in zip(xs, widths, strict=True):
        row = next((r for r, end in enumerate(ends) if end <= x), len(ends))
        if row == len(ends):
            ends.append(x + width)
        else:
            ends[row] = x + width
        rows.append(row)
    return rows


def _figure(timeline: Timeline, title: str) -> object:
    try:
        import matplotlib
    except ModuleNotFoundError:  # the `bench` extra: a core install says so in one line
        feature = "the context timeline (--timeline; an HTML export goes without: --no-timeline)"
        raise missing_extra("matplotlib", "bench", feature) from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    width = min(24.0, max(8.0, len(timeline.calls) * 0.06 + 6))
    fig, ax = plt.subplots(figsize=(width, 5.5), dpi=110)
    xs = [c.index + 1 for c in timeline.calls]
    bottoms = [0] * len(xs)
    values = [
        [c.cache_read for c in timeline.calls],
        [c.cache_write for c in timeline.calls],
        [c.new_input for c in timeline.calls],
        [c.output for c in timeline.calls],
    ]
    hatches = ["//" if c.estimated else "" for c in timeline.calls]
    for name, color, column in zip(COMPONENTS, COLORS, values, strict=True):
        bars = ax.bar(xs, column, bottom=bottoms, color=color, label=name, width=0.9, linewidth=0)
        for bar, hatch in zip(bars, hatches, strict=True):
            bar.set_hatch(hatch)
        bottoms = [b + v for b, v in zip(bottoms, column, strict=True)]
    ax.axhline(timeline.window, color="#333333", linewidth=1.2, label=f"window {timeline.window:,}")
    ax.axhline(
        timeline.threshold,
        color="#333333",
        linewidth=1,
        linestyle="--",
        label=f"threshold {timeline.threshold:,}",
    )
    styles = {"projection": "#2a9d8f", "checkpoint": "#6a4c93", "summary": "#e76f51"}
    top = max([timeline.window, *bottoms, 1])
    right = max(len(xs), 1) + 1
    ax.set_xlim(0, right)
    # Labels in rows above the window line: a row per overlap, the axes grown to hold them.
    axes_inches = fig.get_figwidth() * 0.85
    units_per_inch = right / axes_inches
    marks = sorted(timeline.marks, key=lambda m: m.index)
    starts = [m.index + 0.5 for m in marks]
    widths = [(len(m.label) + 1) * CHAR_INCHES * units_per_inch for m in marks]
    # A label that would run past the right edge is drawn leftwards from its line.
    lefts = [min(x, right - w) for x, w in zip(starts, widths, strict=True)]
    order = sorted(range(len(marks)), key=lambda i: lefts[i])
    placed = label_rows([lefts[i] for i in order], [widths[i] for i in order])
    rows = [0] * len(marks)
    for i, row in zip(order, placed, strict=True):
        rows[i] = row
    band = top * 0.07
    for mark, x, left, row in zip(marks, starts, lefts, rows, strict=True):
        ax.axvline(x, color=styles[mark.kind], linewidth=1.2, alpha=0.9)
        ax.text(
            left,
            top + band * (row + 0.5),
            " " + mark.label,
            color=styles[mark.kind],
            fontsize=LABEL_POINTS,
            va="center",
            ha="left",
        )
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v):,}"))
    ax.set_xlabel("model call")
    ax.set_ylabel("tokens")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(0, top + band * (max(rows, default=-1) + 1.5))
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        fontsize=8,
        ncol=6,
        frameon=False,
    )
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def timeline_figure(timeline: Timeline, title: str) -> object:
    """The matplotlib figure of the timeline (the caller closes it)."""
    return _figure(timeline, title)


def _save(timeline: Timeline, title: str, target: Path | io.StringIO, fmt: str) -> None:
    fig = _figure(timeline, title)
    import matplotlib.pyplot as plt

    try:
        fig.savefig(target, format=fmt)  # type: ignore[attr-defined]
    finally:
        plt.close(fig)  # type: ignore[arg-type]


def write_timeline(timeline: Timeline, path: Path, title: str) -> None:
    """Draw the timeline to `path` (.png or .svg).

    Raises:
        ConfigError: another suffix, or a file that cannot be written.
    """
    if path.suffix.lower() not in FORMATS:
        raise ConfigError(f"--timeline writes .png or .svg, not {path.name!r}")
    try:
        _save(timeline, title, path, path.suffix.lower().lstrip("."))
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc


def timeline_svg(timeline: Timeline, title: str) -> str:
    """The timeline as an SVG document (for embedding in the HTML export)."""
    out = io.StringIO()
    _save(timeline, title, out, "svg")
    text = out.getvalue()
    return text[text.index("<svg") :]
