"""Slash-command answers as widgets: `/context` and `/session checkpoints` as tables,
`/state` and a single checkpoint as text, `/help` as a table.

They render values the engine already computed (`ContextReport`, `Checkpoint`,
`SessionState`); nothing here counts or decides.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from comal.context.relief.recorded import Checkpoint
from comal.context.report import ContextReport


class ReportTable(DataTable[str | Text]):
    """A read-only table inside the transcript (it never takes the prompt's focus)."""

    can_focus = False


class ContextView(Vertical):
    """The `/context` answer."""

    def __init__(self, report: ContextReport) -> None:
        super().__init__(classes="report")
        self.report = report

    def compose(self) -> ComposeResult:
        r = self.report
        used = f"{r.used_tokens:,}" if r.used_measured else f"~{r.used_tokens:,}"
        base = "measured base" if r.used_measured else "estimated"
        kind = "exact" if r.counter_exact else "estimate, calibrated"
        yield Static(
            Text(f"Context · {r.model}", style="bold")
            + Text(
                f"\nwindow {r.window_tokens:,} ({r.window_source}) · used {used} ({base})"
                f" · automatic threshold {r.threshold_tokens:,} · counting {r.counter} ({kind})"
            )
        )
        table = ReportTable(id="context-table", show_cursor=False)
        table.add_columns("component", "tokens", "share")
        for row in r.rows:
            amount = f"{row.tokens:,}" if row.measured else f"~{row.tokens:,}"
            table.add_row(row.name, Text(amount, justify="right"), f"{row.percent:5.1f}%")
        yield table
        cp = f" (latest {r.latest_checkpoint})" if r.latest_checkpoint else ""
        lines = [
            f"anchor: {r.anchor}",
            f"projected results: {r.projected_items} · checkpoints: {r.checkpoint_count}{cp}",
            f"media reserve: {r.media_budget_tokens:,} tokens · {r.media_by_reference} shown by"
            " reference",
        ]
        if r.plugins:
            listed = ", ".join(f"{name} (~{tokens:,} schema tokens)" for name, tokens in r.plugins)
            lines.append(f"plugins loaded: {listed}")
        receipts = r.receipts_line()
        if receipts is not None:
            lines.append(receipts)
        if r.pending_compaction:
            lines.append("a compaction is requested; it runs at the next turn boundary")
        yield Static("\n".join(lines), classes="dim")


class CheckpointList(Vertical):
    """The `/session checkpoints` answer."""

    def __init__(self, found: list[Checkpoint]) -> None:
        super().__init__(classes="report")
        self.found = found

    def compose(self) -> ComposeResult:
        if not self.found:
            yield Static("no checkpoints yet · /compact derives one")
            return
        title = Text("Checkpoints", style="bold") + Text(" · /session checkpoints N shows one")
        yield Static(title)
        table = ReportTable(id="checkpoint-table", show_cursor=False)
        table.add_columns("#", "title", "by", "tokens before → after", "when (UTC)")
        for cp in self.found:
            when = datetime.fromtimestamp(cp.created_at / 1000, UTC).strftime("%Y-%m-%d %H:%M")
            table.add_row(
                str(cp.number),
                cp.title,
                cp.by,
                f"~{cp.before_tokens:,} → ~{cp.after_tokens:,}",
                when,
            )
        yield table


class TextReport(Static):
    """A titled block of plain text (`/state`, one checkpoint)."""

    def __init__(self, title: str, body: str) -> None:
        super().__init__(Text(title, style="bold") + Text("\n" + body), classes="report")
        self.body = body


class HelpView(Static):
    """The `/help` answer.

    A Rich table in a Static, not a DataTable: a DataTable in an auto-height container has no
    height on its first layout, so the box stayed empty until the terminal was resized.
    """

    def __init__(self, rows: tuple[tuple[str, str], ...]) -> None:
        table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
        table.add_column("keys", style="bold", no_wrap=True)
        table.add_column("what")
        for keys, what in rows:
            table.add_row(keys, what)
        super().__init__(table, classes="report")
        self.rows = rows
