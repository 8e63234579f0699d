"""The scrolling transcript: one widget per item, fed by `AgentEvent`s.

Invariants: the transcript only renders what events (or recorded entries) say; it never reads
engine state. Streamed text goes into the open assistant item until the reply is recorded
(`AssistantReplied`), when it is re-rendered as Markdown; a discarded response keeps its text
but is marked so, and so does a reply a cancel (Esc) cut mid-stream: the ledger records none of
it. Each tool call is one item showing the last lines of its output as it runs, updated in
place when its receipt arrives.
"""

from __future__ import annotations

from rich.markdown import Markdown
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from comal.agent.core.events import (
    AgentEvent,
    AssistantReplied,
    ChildActivity,
    ChildFinished,
    ChildStarted,
    ContextActed,
    Failed,
    Notice,
    ReasoningStreamed,
    Refused,
    ResponseDiscarded,
    SessionOpened,
    TextStreamed,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from comal.tui.history import PastItem, tool_line
from comal.tui.widgets.children import ChildPanel

PREVIEW_LINES = 4
"""Lines of a tool's output shown under its receipt."""


class UserItem(Static):
    """A message the user sent."""

    def __init__(self, text: str, *, queued: bool = False) -> None:
        self.text = text
        label = Text("› ", style="bold") + Text(text)
        if queued:
            label.append("  (queued)", style="dim italic")
        super().__init__(label, classes="user")


class AssistantItem(Static):
    """Assistant text: streamed as plain text, then shown as Markdown once recorded."""

    def __init__(self, text: str = "") -> None:
        super().__init__(Text(text), classes="assistant")
        self.text = text
        self.done = False

    def append(self, piece: str) -> None:
        """Add streamed text."""
        self.text += piece
        self.update(Text(self.text))

    def finish(self, text: str) -> None:
        """The recorded reply: render it as Markdown."""
        self.text = text or self.text
        self.done = True
        self.update(Markdown(self.text))

    def refuse(self) -> None:
        """The reply was a refusal: shown as the model's words, marked as not an answer."""
        self.add_class("refused")
        self.update(Text(self.text, style="italic"))

    def discard(self, reason: str) -> None:
        """The response did not finish and was recorded as discarded."""
        self.done = True
        self.add_class("discarded")
        self.update(Text(self.text) + Text(f"\n[discarded: {reason}]", style="italic"))


class ReasoningItem(Static):
    """Provider reasoning, dimmed; only its last lines are kept on screen."""

    def __init__(self) -> None:
        super().__init__("", classes="reasoning")
        self.text = ""

    def append(self, piece: str) -> None:
        """Add streamed reasoning."""
        self.text += piece
        tail = "\n".join(self.text.splitlines()[-PREVIEW_LINES:])
        self.update(Text("∴ " + tail))


class ToolItem(Static):
    """One tool call: its summary while running, then status, exit code, size and a preview."""

    def __init__(self, call_id: str, summary: str) -> None:
        super().__init__(Text("→ " + summary), classes="tool running")
        self.call_id = call_id
        self.summary = summary
        self.status: str | None = None
        self.output = ""
        """The output so far while it runs (its last lines are shown under the summary)."""

    def grow(self, text: str) -> None:
        """More output of the running call: show its last lines."""
        if self.status is not None:
            return
        self.output = (self.output + text)[-8192:]
        lines = [ln.rstrip() for ln in self.output.replace("\r", "\n").splitlines()]
        tail = [ln for ln in lines if ln.strip()][-PREVIEW_LINES:]
        label = Text("→ " + self.summary)
        if tail:
            label.append("\n" + "\n".join("  " + ln for ln in tail), style="dim")
        self.update(label)

    def finish(self, event: ToolFinished) -> None:
        """Show the call's receipt."""
        self.status = event.status
        self.remove_class("running")
        ok = event.status == "ok" and not event.exit_code
        self.add_class("ok" if ok else "failed")
        mark = "✓" if ok else "✗"
        line = tool_line(event.status, event.exit_code, event.size_bytes)
        label = Text(f"{mark} {self.summary}", style="bold") + Text(f" — {line}")
        preview = event.preview.rstrip("\n").splitlines()
        if preview:
            shown = preview[:PREVIEW_LINES]
            if len(preview) > PREVIEW_LINES:
                shown.append(f"… {len(preview) - PREVIEW_LINES} more line(s) in the preview")
            label.append("\n" + "\n".join("  " + s for s in shown), style="dim")
        self.update(label)


class NoticeItem(Static):
    """A context action, a notice, an error or the answer to a slash command."""

    def __init__(self, text: str, kind: str = "info") -> None:
        super().__init__(Text(text), classes=f"notice {kind}")
        self.kind = kind
        self.text = text


class Transcript(VerticalScroll):
    """The conversation so far, newest at the bottom."""

    def __init__(self) -> None:
        super().__init__(id="transcript")
        self._assistant: AssistantItem | None = None
        self._replied: AssistantItem | None = None
        """The last recorded reply (a refusal that follows it marks it)."""
        self._reasoning: ReasoningItem | None = None
        self._tools: dict[str, ToolItem] = {}
        self.children_panels: dict[str, ChildPanel] = {}
        """Child sessions by id, each a collapsible panel."""

    def on_mount(self) -> None:
        """Stay scrolled to the newest item unless the user scrolls up."""
        self.anchor()

    def add(self, widget: Widget) -> None:
        """Append any widget (slash-command output, tables)."""
        self.mount(widget)

    def add_user(self, text: str, *, queued: bool = False) -> UserItem:
        """Append a user message."""
        item = UserItem(text, queued=queued)
        self.mount(item)
        return item

    def add_notice(self, text: str, kind: str = "info") -> NoticeItem:
        """Append a notice (`info`, `context`, `warning`, `refused` or `error`)."""
        item = NoticeItem(text, kind)
        self.mount(item)
        return item

    def add_past(self, items: tuple[PastItem, ...]) -> None:
        """Append recorded history (a resumed session)."""
        for item in items:
            if item.kind == "user":
                self.add_user(item.text)
            elif item.kind == "assistant":
                widget = AssistantItem()
                widget.finish(item.text)
                self.mount(widget)
            elif item.kind == "refused":
                widget = AssistantItem(item.text)
                self.mount(widget)
                widget.refuse()
                self.add_notice("⊘ the model refused — this is not an answer", "refused")
            elif item.kind == "tool":
                mark = "✗" if item.failed else "✓"
                self.mount(NoticeItem(f"{mark} {item.text}", "tool-past"))
            else:
                self.add_notice(f"◆ {item.text}", "context")

    def close_reply(self, *, cancelled: bool = False) -> None:
        """Forget the open assistant and reasoning items (a new step or turn starts).

        Args:
            cancelled: the turn was cancelled; a reply still streaming is marked unrecorded.
        """
        if cancelled and self._assistant is not None and not self._assistant.done:
            self._assistant.discard("cancelled by the user (Esc); not recorded")
        self._assistant = None
        self._reasoning = None

    def apply(self, event: AgentEvent) -> None:
        """Render one agent event."""
        if isinstance(event, TextStreamed):
            if self._assistant is None:
                self._assistant = AssistantItem()
                self.mount(self._assistant)
            self._assistant.append(event.text)
        elif isinstance(event, ReasoningStreamed):
            if event.text:
                if self._reasoning is None:
                    self._reasoning = ReasoningItem()
                    self.mount(self._reasoning)
                self._reasoning.append(event.text)
        elif isinstance(event, AssistantReplied):
            self._replied = self._assistant
            if self._assistant is not None:
                self._assistant.finish(event.text)
            elif event.text.strip():
                self._replied = item = AssistantItem()
                item.finish(event.text)
                self.mount(item)
            self.close_reply()
        elif isinstance(event, Refused):
            if self._replied is not None:
                self._replied.refuse()
            reason = f": {event.reason}" if event.reason else ""
            self.add_notice(f"⊘ the model refused{reason} — this is not an answer", "refused")
        elif isinstance(event, ResponseDiscarded):
            if self._assistant is not None:
                self._assistant.discard(event.reason)
            self.add_notice(
                f"! response discarded ({event.reason}); none of its tool calls ran; output"
                f" reserve now {event.new_output_reserve:,}",
                "warning",
            )
            self.close_reply()
        elif isinstance(event, ToolStarted):
            tool = ToolItem(event.call_id, event.summary)
            self._tools[event.call_id] = tool
            self.mount(tool)
        elif isinstance(event, ToolOutput):
            running = self._tools.get(event.call_id)
            if running is not None:
                running.grow(event.text)
        elif isinstance(event, ChildStarted | ChildActivity | ChildFinished):
            self._apply_child(event)
        elif isinstance(event, ToolFinished):
            found = self._tools.pop(event.call_id, None)
            if found is None:
                found = ToolItem(event.call_id, event.name)
                self.mount(found)
            found.finish(event)
        else:
            self._apply_status(event)

    def _apply_child(self, event: ChildStarted | ChildActivity | ChildFinished) -> None:
        panel = self.children_panels.get(event.session_id)
        if isinstance(event, ChildStarted):
            if panel is None:
                panel = ChildPanel(event)
                self.children_panels[event.session_id] = panel
                self.mount(panel)
        elif panel is None:
            return  # a receipt read back without a run: the tool's own item shows it
        elif isinstance(event, ChildActivity):
            panel.apply(event.event)
        else:
            panel.finish(event)

    def _apply_status(self, event: AgentEvent) -> None:
        if isinstance(event, TurnStarted):
            self.close_reply()
        elif isinstance(event, ContextActed):
            what = (
                f"checkpoint #{event.checkpoint_number} derived"
                if event.action == "checkpoint" and event.checkpoint_number
                else event.action
            )
            self.add_notice(f"◆ context: {what} → ~{event.after_tokens:,} tokens", "context")
        elif isinstance(event, Notice):
            self.add_notice(f"! {event.code}: {event.message}", "warning")
        elif isinstance(event, Failed):
            self.close_reply()
            self.add_notice(
                f"✗ {event.code}: {event.message}\n  session {event.session_id} is resumable",
                "error",
            )
        elif isinstance(event, SessionOpened):
            verb = "resumed" if event.resumed else "started"
            self.add_notice(
                f"● session {event.session_id} {verb} · {event.provider}/{event.model} · window"
                f" {event.window_tokens:,} ({event.window_source})"
                + (f"\n  ⚠ {event.sandbox}" if event.sandbox else ""),
                "warning" if event.sandbox else "info",
            )
        elif isinstance(event, TurnFinished):
            self.close_reply()
            if event.status == "finished":
                self.add_notice("● the session is finished (its checks passed)")
