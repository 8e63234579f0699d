"""`ComalApp`: the interactive front end over the same engine and `AgentEvent` stream as `-p`.

Invariants:
- Each user turn runs as a Textual worker (`agent.turns.start_turn`), so the screen stays
  responsive; at most one turn runs at a time and messages sent meanwhile wait in order. The
  turn lifecycle (its end, its cancel, `/compact`) and every ledger entry it writes belong to
  `agent.turns`; this module only shows them.
- A new session is created on the first message (quitting an empty screen records nothing); a
  resumed one is opened, and locked, when the app mounts, and its first turn starts with
  recovery, as does the first turn after a cancel.
- Esc cancels the running turn: the tool context's cancel event stops a running Bash (its
  process group is killed and its receipt recorded), then the turn stops at its next
  cancellation point (the next await, or before the next model call or tool call starts); the
  session is left `interrupted` and resumable. A tool that ignores the event is cancelled
  with its task after `CANCEL_GRACE_S`. Calls of the cancelled batch that never started get
  a `denied` receipt, so nothing the user stopped runs later.
- `/compact` derives at once when idle; during a turn it records `compact.requested`, which
  the loop honours before its next model call, and whatever is still pending when the turn
  ends is derived then. A compaction that would not make the view smaller is refused with
  its figures (recorded as `compact.cancelled`), and the session goes on as it was.
- Permission `ask` verdicts become a modal yes / no / always allow this pattern (written to
  `.comal/config.toml`); nothing else asks the user anything.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.worker import Worker, WorkerState

from comal.agent.children.run import Delegation, offers_delegation
from comal.agent.core.events import (
    AgentEvent,
    ChildActivity,
    ToolFinished,
    ToolStarted,
    TurnStarted,
)
from comal.agent.core.session import Session, SessionOptions, open_session, reconfigure
from comal.agent.features.custom_commands import command_folders, expand_command, load_commands
from comal.agent.features.init_file import write_agents_md
from comal.agent.features.rewind import apply_rewind, plan_rewind, turns
from comal.agent.features.state import render_state, session_state
from comal.agent.features.user_shell import ShellRun, offered, run_user_command
from comal.agent.turns import (
    Compaction,
    Outcome,
    cancel_turn,
    compact,
    end_turn,
    start_turn,
)
from comal.config import Config, PermissionRule, add_workspace_rule
from comal.errors import ComalError, ConfigError
from comal.ledger.store import Ledger
from comal.messages import JSONObject
from comal.providers.base import Provider
from comal.session import render_cost, session_cost
from comal.tools.base import Tool
from comal.tools.permissions import PermissionPolicy, suggest_rules
from comal.tui.commands import HELP_ROWS, SlashCommand, UnknownCommandError, parse_command
from comal.tui.habits import (
    TITLES,
    config_report,
    cost_report,
    mcp_report,
    memory_report,
    permissions_report,
    resumable,
    resume_list,
    served_list,
    status_report,
    unknown_model,
)
from comal.tui.history import past_items
from comal.tui.prompt_history import PromptHistory
from comal.tui.terminal import sturdy
from comal.tui.widgets.confirm import ConfirmScreen
from comal.tui.widgets.prompt import PromptArea
from comal.tui.widgets.reports import CheckpointList, ContextView, HelpView, TextReport
from comal.tui.widgets.rewind import RewindScreen
from comal.tui.widgets.status import StatusBar, StatusLine
from comal.tui.widgets.transcript import ToolItem, Transcript
from comal.tui.widgets.working import WorkingLine

ModelSwitch = Callable[[str], Awaitable[Provider]]
"""Builds the provider of the same configuration for another model."""
ModelList = Callable[[], Awaitable[tuple[str, ...] | None]]
"""The model ids the provider's server lists (None when it lists none)."""

CANCEL_GRACE_S = 3.0
"""How long Esc waits for a running tool to stop on its own before cancelling the task."""

QUIT_WINDOW_S = 2.0
"""A second Ctrl+C on an empty input within this many seconds quits."""


@dataclass(slots=True)
class SessionStart:
    """What the app needs to open its session (new on the first message, or resumed)."""

    ledger: Ledger
    config: Config
    provider: Provider
    tools: list[Tool]
    options: SessionOptions = field(default_factory=SessionOptions)
    session_id: str | None = None
    """The session to resume; None starts a new one on the first message."""
    workspace: Path | None = None
    switch_model: ModelSwitch | None = None
    """Builds the provider for another model (`/model NAME`); None: switching is not offered."""
    first_message: str | None = None
    """Sent as the first message once the app is up (`comal "task"`)."""
    list_models: ModelList | None = None
    """The server's models (`/model` lists them and checks a name against them)."""


class ComalApp(App[int]):
    """The interactive front end.

    Args:
        start: how to open the session.
    """

    CSS_PATH = "comal.tcss"
    TITLE = "comal"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel_turn", "cancel turn", show=False),
        Binding("ctrl+c", "interrupt", "clear · quit", show=False, priority=True),
    ]

    def __init__(self, start: SessionStart) -> None:
        super().__init__(driver_class=sturdy(App.get_driver_class(self)))
        self.start = start
        self.session: Session | None = None
        self.cancel_event = asyncio.Event()
        self.turn: Worker[Outcome] | None = None
        self.queued: list[str] = []
        self._tool_running = False
        self._cancelling = False
        self._step = 0
        self._recover = start.session_id is not None
        """The next turn starts with recovery (a resumed session, or after a cancel)."""
        self._ctrl_c_at: float | None = None
        self.shell_runs: list[ShellRun] = []
        """`!command` runs whose output goes with the next message."""
        self.prompts = PromptHistory(start.config.home, self._workspace())
        # Held, not queried: a modal screen (a permission question) may be the active one.
        self.working_line = WorkingLine()
        self.prompt_area = PromptArea(self._workspace())

    # --- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        provider = self.start.provider
        yield Transcript()
        yield self.working_line
        yield self.prompt_area
        yield StatusBar(StatusLine(provider.model, provider.capabilities.context_window))

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        return self.query_one(Transcript)

    @property
    def status_bar(self) -> StatusBar:
        """The status bar widget."""
        return self.query_one(StatusBar)

    def on_mount(self) -> None:
        prompt = self.query_one(PromptArea)
        prompt.earlier = self.prompts.items
        prompt.focus()
        if self.start.session_id is None:
            self.transcript.add_notice(
                f"comal · {self.start.provider.name}/{self.start.provider.model} · type a task,"
                " or /help"
            )
            self._send_first()
            return
        try:
            session = self._open()
        except ComalError as exc:
            self.exit(exc.exit_code, return_code=exc.exit_code, message=f"comal: {exc}")
            return
        self.transcript.add_past(past_items(session.ledger.entries(session.id)))
        state = session_state(session.ledger, session.id)
        if state.pending or state.uncertain or state.plan_open:
            self.transcript.add_notice(
                f"{len(state.pending)} pending and {len(state.uncertain)} uncertain call(s);"
                f" plan {'open' if state.plan_open else 'closed'} · recovery runs at the start of"
                " the next turn (/state shows them)",
                "warning",
            )
        self._refresh_context()
        self._send_first()

    def _send_first(self) -> None:
        if self.start.first_message:
            self._start_turn(self.start.first_message, shown=False)

    # --- session ----------------------------------------------------------------------------

    def _open(self) -> Session:
        if self.session is not None:
            return self.session
        s = self.start
        options = dataclasses.replace(
            s.options,
            emit=self._on_event,
            ask=self._ask,
            cancel=self.cancel_event,
            interactive=True,
        )
        self.session = open_session(
            s.ledger,
            s.config,
            s.provider,
            s.tools,
            options,
            session_id=s.session_id,
            workspace=s.workspace,
            bound=Delegation(s.ledger, s.config, s.provider, s.tools, options)
            if offers_delegation(s.config, s.provider.capabilities.context_window)
            else None,
        )
        self._set_status(session_id=s.ledger.short_id(self.session.id))
        return self.session

    def _set_status(self, **changes: Any) -> None:
        line = dataclasses.replace(self.status_bar.line, **changes)
        self.status_bar.show(line)

    def _refresh_context(self) -> None:
        if self.session is None:
            return
        try:
            report = self.session.engine.report()
        except ComalError as exc:
            self.transcript.add_notice(f"! context unavailable: {exc}", "warning")
            self._set_status(used_tokens=None)
            return
        self._set_status(
            used_tokens=report.used_tokens,
            measured=report.used_measured,
            window_tokens=report.window_tokens,
        )

    # --- events from the engine -------------------------------------------------------------

    def _on_event(self, event: AgentEvent) -> None:
        inner = event
        while isinstance(inner, ChildActivity):  # children stop with the turn, at the same points
            inner = inner.event
        if self._cancelling and isinstance(inner, TurnStarted | ToolStarted):
            # A cancellation point the loop reaches without awaiting: stop before the next
            # model call streams or the next tool call starts, exactly as `Task.cancel()`
            # would at the next await (which a provider that never suspends would skip).
            raise asyncio.CancelledError("cancelled by the user (Esc)")
        self.working_line.apply(event)
        self.transcript.apply(event)
        if isinstance(event, TurnStarted):
            self._step = event.step
            self._set_status(
                used_tokens=event.estimated_tokens,
                measured=event.measured_base,
                activity=f"thinking · step {event.step}",
            )
        elif isinstance(event, ToolStarted):
            self._tool_running = True
            self._set_status(activity=f"running {event.name}")
        elif isinstance(event, ToolFinished):
            self._tool_running = False
            if not self._cancelling:
                self._set_status(activity=f"thinking · step {self._step}")

    async def _ask(self, tool: str, arguments: JSONObject, reason: str) -> bool:
        """The permission hook: a modal yes / no / always allow this pattern."""
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        def done(given: str | None) -> None:
            if not answer.done():
                answer.set_result(given or "no")

        rules = self._always_rules(tool, arguments)
        screen = ConfirmScreen(tool, arguments, reason, tuple(r.pattern for r in rules))
        self._set_status(activity=f"waiting for your answer ({tool})")
        self.push_screen(screen, callback=done)
        try:
            given = await answer
        except asyncio.CancelledError:
            if screen.is_current:
                screen.dismiss("no")
            raise
        if given == "always":
            self._remember(rules)
        return given in ("yes", "always")

    def _always_rules(self, name: str, arguments: JSONObject) -> tuple[PermissionRule, ...]:
        """The allow rules "always" would add: only when they make this very call allowed."""
        s = self.session
        tool = s.runner.registry.get(name) if s is not None else None
        if s is None or tool is None:
            return ()
        rules = suggest_rules(tool, arguments)
        trial = PermissionPolicy(s.runner.permissions.config, s.runner.context.workspace)
        for rule in (*s.runner.permissions.rules[len(trial.rules) :], *rules):
            trial.add_rule(rule)
        return rules if rules and trial.decide(tool, arguments).allowed else ()

    def _remember(self, rules: tuple[PermissionRule, ...]) -> None:
        """Apply the rules now and write them to the workspace config."""
        s = self.session
        if s is None:
            return
        for rule in rules:
            s.runner.permissions.add_rule(rule)
            try:
                path = add_workspace_rule(s.runner.context.workspace, rule)
            except ConfigError as exc:
                self.transcript.add_notice(f"not saved: {exc.message}", "warning")
                continue
            self.transcript.add_notice(f"always allowed {rule.tool}({rule.pattern}) in {path}")

    # --- input ------------------------------------------------------------------------------

    def on_prompt_area_submitted(self, message: PromptArea.Submitted) -> None:
        text = message.text.strip()
        problem = self.prompts.add(text)
        if problem is not None:
            self.transcript.add_notice(f"! {problem}", "warning")
        if text.startswith("!") and text[1:].strip():
            self._shell(text[1:].strip())
            return
        try:
            command = parse_command(text)
        except UnknownCommandError as exc:
            expanded = self._custom(text)
            if expanded is None:
                self.transcript.add_notice(f"✗ {exc.message}", "error")
                return
            command, text = None, expanded
        if command is not None:
            self.answer_command(command)
            return
        if text.startswith("//"):
            text = text[1:]
        if self.turn is not None:
            self.queued.append(text)
            self.transcript.add_user(text, queued=True)
            return
        self._start_turn(text, shown=False)

    def on_prompt_area_cancel_requested(self, _: PromptArea.CancelRequested) -> None:
        self.action_cancel_turn()

    def _start_turn(self, text: str, *, shown: bool) -> None:
        try:
            session = self._open()
        except ComalError as exc:
            self.transcript.add_notice(f"✗ {exc}", "error")
            return
        if not shown:
            self.transcript.add_user(text)
        text, self.shell_runs = offered(self.shell_runs, text), []
        self.cancel_event.clear()
        self._cancelling = False
        self._tool_running = False
        self._set_status(activity="thinking")
        self.working_line.start()
        work = start_turn(session, text, recover_first=self._recover)
        self._recover = False
        self.turn = self.run_worker(work, name="turn", group="turn", exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.turn or event.state not in (
            WorkerState.SUCCESS,
            WorkerState.ERROR,
            WorkerState.CANCELLED,
        ):
            return
        self.turn = None
        self._tool_running = False
        self.working_line.stop()
        cancelled = event.state == WorkerState.CANCELLED
        self.transcript.close_reply(cancelled=cancelled)
        compaction = None
        if self.session is not None:
            compaction = end_turn(self.session, cancelled=cancelled)
        if cancelled and self.session is not None:
            self._recover = True
            self.transcript.add_notice(
                f"■ turn cancelled · session {self.session.id} is resumable", "warning"
            )
        elif event.state == WorkerState.ERROR:
            self.transcript.add_notice(f"✗ unexpected error: {event.worker.error!r}", "error")
        self._cancelling = False
        self.cancel_event.clear()
        self._set_status(activity="idle")
        if compaction is not None:
            self._show_compaction(compaction)
        self._refresh_context()
        if self.queued:
            self._start_turn(self.queued.pop(0), shown=True)

    # --- actions ----------------------------------------------------------------------------

    def action_cancel_turn(self) -> None:
        """Esc: stop the running turn (a running tool first, so its receipt is recorded)."""
        turn = self.turn
        if turn is None or self._cancelling:
            return
        self._cancelling = True
        self.queued.clear()
        # Esc drops a `/compact` waiting for the turn boundary, as it drops queued messages.
        if self.session is not None and cancel_turn(self.session):
            self.transcript.add_notice("◆ queued compaction cancelled", "context")
        self.cancel_event.set()
        self._set_status(activity="cancelling")
        if not self._tool_running:
            turn.cancel()
            return

        def force() -> None:
            if self.turn is turn:
                turn.cancel()

        self.set_timer(CANCEL_GRACE_S, force)

    def action_interrupt(self) -> None:
        """Ctrl+C: clear the input; on an empty one, cancel the running turn, else quit when
        pressed twice (the first says so in the status bar)."""
        if self.screen is not self.screen_stack[0] and isinstance(self.screen, ModalScreen):
            self.screen.dismiss(None)  # a question or picker: Ctrl+C answers no
            return
        prompt = self.prompt_area
        if prompt.text:
            prompt.clear()
            self._ctrl_c_at = None
            return
        if self.turn is not None:
            self.action_cancel_turn()
            return
        now = time.monotonic()
        if self._ctrl_c_at is not None and now - self._ctrl_c_at <= QUIT_WINDOW_S:
            self.run_worker(self.action_quit(), group="quit")
            return
        self._ctrl_c_at = now
        self._set_status(activity="press Ctrl+C again to quit")

    async def action_quit(self) -> None:
        """Leave; a running turn is cancelled first and the lock released by the launcher."""
        await self._leave(0)

    def stop_by_signal(self, signum: int) -> None:
        """SIGTERM or SIGHUP: leave as `/quit` does (a running command's process group is
        killed and its call recorded), exiting 128 + the signal number."""
        self.run_worker(self._leave(128 + signum), group="quit")

    async def _leave(self, code: int) -> None:
        turn = self.turn
        if turn is not None:
            self._cancelling = True
            self.cancel_event.set()
            turn.cancel()
            await asyncio.gather(turn.wait(), return_exceptions=True)
        self.exit(code, return_code=code)

    def answer_command(self, command: SlashCommand) -> None:
        """Answer one slash command in the transcript."""
        if command.name == "quit":
            self.run_worker(self.action_quit(), group="quit")
            return
        if command.name == "help":
            self.transcript.add(HelpView(HELP_ROWS))
            return
        if command.name == "init":
            try:
                path = write_agents_md(self._workspace())
            except ComalError as exc:
                self.transcript.add_notice(f"✗ {exc.message}", "error")
                return
            self.transcript.add_notice(f"wrote {path}: edit it; sessions load it from now on")
            return
        if command.name == "clear":
            self._clear()
            return
        if command.name in ("model", "effort"):
            self.run_worker(self._configure(command), group="configure", exit_on_error=False)
            return
        try:
            if command.name in TITLES:
                self.transcript.add(TextReport(TITLES[command.name], self._report(command.name)))
                return
            if command.name == "resume":
                self._resume(command.value)
                return
        except ComalError as exc:
            self.transcript.add_notice(f"✗ {exc}", "error")
            return
        if self.session is None:
            self.transcript.add_notice("no session yet: send a task first", "warning")
            return
        try:
            self._session_command(self.session, command)
        except ComalError as exc:
            self.transcript.add_notice(f"✗ {exc}", "error")

    def _session_command(self, session: Session, command: SlashCommand) -> None:
        if command.name == "context":
            self.transcript.add(ContextView(session.engine.report()))
            entries = session.ledger.entries(session.id)
            self.transcript.add_notice(render_cost(session_cost(entries, self.start.config.prices)))
        elif command.name == "state":
            state = session_state(session.ledger, session.id, self.start.config.prices)
            self.transcript.add(TextReport("State", render_state(state)))
        elif command.name == "checkpoints":
            found = session.engine.checkpoints()
            if command.number is None:
                self.transcript.add(CheckpointList(found))
                return
            chosen = next((c for c in found if c.number == command.number), None)
            if chosen is None:
                self.transcript.add_notice(
                    f"✗ no checkpoint {command.number} ({len(found)} recorded)", "error"
                )
                return
            title = f"Checkpoint #{chosen.number} · {chosen.title}"
            self.transcript.add(TextReport(title, chosen.text))
        elif command.name == "rewind":
            self._rewind(session, command)
        elif command.name == "compact":
            self._show_compaction(compact(session, running=self.turn is not None))
            if self.turn is None:
                self._refresh_context()

    def _workspace(self) -> Path:
        return self.start.workspace or self.start.config.workspace

    def _report(self, name: str) -> str:
        """The text of a report command (`habits.TITLES`)."""
        s, start, workspace = self.session, self.start, self._workspace()
        provider = s.provider if s is not None else start.provider
        options = s.options if s is not None else start.options
        effort = options.reasoning_effort
        if name == "status":
            return status_report(start.config, provider, effort, s, workspace)
        if name == "cost":
            return cost_report(start.config, start.ledger, s)
        if name == "mcp":
            return mcp_report(start.config, start.tools, options.mcp_failures)
        if name == "permissions":
            return permissions_report(start.config, s, workspace)
        if name == "config":
            return config_report(start.config, provider, effort)
        return memory_report(start.config, workspace)

    def _resume(self, chosen: str | None) -> None:
        """`/resume`: this directory's sessions, or open one here (this one stays resumable)."""
        ledger = self.start.ledger
        current = None if self.session is None else self.session.id
        listed = resumable(ledger, self._workspace(), current)
        if chosen is None:
            self.transcript.add(TextReport("Resume", resume_list(ledger, listed)))
            return
        if self.turn is not None:
            self.transcript.add_notice("✗ a turn is running: /resume when it ends", "error")
            return
        if chosen.isdigit() and 1 <= int(chosen) <= len(listed):
            target = listed[int(chosen) - 1].id
        else:
            target = ledger.resolve(chosen)
        old, before = self.session, self.start
        if old is not None and old.id == target:
            self.transcript.add_notice("this is the session already open")
            return
        self.session = None
        self.start = dataclasses.replace(self.start, session_id=target)
        try:
            session = self._open()
        except ComalError:
            self.session, self.start = old, before  # the current session stays open
            raise
        if old is not None:
            ledger.release_lock(old.id)
        self._recover = True
        self.transcript.remove_children()
        self.transcript.add_past(past_items(ledger.entries(session.id)))
        left = f" · the last one stays resumable: comal --resume {old.id}" if old else ""
        self.transcript.add_notice(f"● resumed session {session.id}{left}")
        self._refresh_context()

    def _shell(self, command: str) -> None:
        """`!command`: run it in the workspace; its output goes with the next message."""
        if self.turn is not None:
            self.transcript.add_notice("✗ a turn is running: !command when it ends", "error")
            return
        try:
            session = self._open()
        except ComalError as exc:
            self.transcript.add_notice(f"✗ {exc}", "error")
            return
        item = ToolItem(f"shell_{len(self.shell_runs)}", f"! {command}")
        self.transcript.add(item)

        async def run() -> None:
            done = await run_user_command(session, command)
            self.shell_runs.append(done)
            out = done.outcome
            item.finish(
                ToolFinished(
                    "", "shell", out.status, out.exit_code, len(out.output), done.text[:4000]
                )
            )
            self.transcript.add_notice("its output goes with your next message")

        self.run_worker(run(), group="shell", exit_on_error=False)

    def _custom(self, text: str) -> str | None:
        """The prompt of a custom command, or None when `text` names none."""
        config = self.start.config
        folders = command_folders(self._workspace(), config.config_dir, Path.home())
        try:
            return expand_command(text, load_commands(folders))
        except ComalError as exc:
            self.transcript.add_notice(f"✗ {exc.message}", "error")
            return None

    def _clear(self) -> None:
        """`/clear`: the next message starts a new session; this one stays resumable."""
        if self.turn is not None:
            self.transcript.add_notice("✗ a turn is running: /clear when it ends", "error")
            return
        old = self.session
        if old is not None:
            old.ledger.release_lock(old.id)
            self.start = dataclasses.replace(
                self.start, provider=old.provider, options=old.options, session_id=None
            )
        self.session = None
        self._recover = False
        self.transcript.remove_children()
        shown = f" · the last one stays resumable: comal --resume {old.id}" if old else ""
        self.transcript.add_notice(f"new session on the next message{shown}")
        self._set_status(session_id=None, used_tokens=None)

    async def _configure(self, command: SlashCommand) -> None:
        """`/model [NAME]` and `/effort [LEVEL]`: show, or change from the next model call on."""
        provider = self.session.provider if self.session else self.start.provider
        options = self.session.options if self.session else self.start.options
        served = None
        if command.name == "model" and self.start.list_models is not None:
            served = await self.start.list_models()
        if command.value is None:
            shown = provider.model if command.name == "model" else options.reasoning_effort
            listed = (
                served_list(served) if self.start.list_models and command.name == "model" else ""
            )
            self.transcript.add_notice(f"{command.name}: {shown or 'off'}{listed}")
            return
        if served is not None and command.value not in served:
            self.transcript.add_notice(f"✗ {unknown_model(command.value, served)}", "error")
            return
        if self.turn is not None:
            self.transcript.add_notice(
                f"✗ a turn is running: /{command.name} when it ends", "error"
            )
            return
        new_provider, effort = provider, options.reasoning_effort
        try:
            if command.name == "model":
                if self.start.switch_model is None:
                    raise ConfigError("this session cannot switch models")
                new_provider = await self.start.switch_model(command.value)
            else:
                effort = None if command.value == "off" else command.value
        except ComalError as exc:
            self.transcript.add_notice(f"✗ {exc}", "error")
            return
        if self.session is None:
            self.start = dataclasses.replace(
                self.start,
                provider=new_provider,
                options=dataclasses.replace(options, reasoning_effort=effort),
            )
        else:
            reconfigure(
                self.session,
                self.start.config,
                provider=new_provider,
                effort=effort,
                keep_effort=False,
            )
        self._set_status(
            model=new_provider.model, window_tokens=new_provider.capabilities.context_window
        )
        self.transcript.add_notice(
            f"◆ {new_provider.model} · effort {effort or 'off'} from the next call on (the measured"
            " context base is re-measured; reasoning is replayed only to the model that made it)",
            "context",
        )
        self._refresh_context()

    def _rewind(self, session: Session, command: SlashCommand) -> None:
        """`/rewind`: the picker without a turn number, else restore to before that turn."""
        if self.turn is not None:
            self.transcript.add_notice("✗ a turn is running: rewind when it ends", "error")
            return
        listed = turns(session.ledger, session.id)
        if not listed:
            self.transcript.add_notice("no turn to rewind yet", "warning")
            return
        if command.number is not None:
            self._rewind_to(session, command, command.number)
            return

        def picked(number: int | None) -> None:
            if number is not None:
                self._rewind_to(session, command, number)

        self.push_screen(RewindScreen(listed), callback=picked)

    def _rewind_to(self, session: Session, command: SlashCommand, number: int) -> None:
        listed = turns(session.ledger, session.id)
        try:
            plan = plan_rewind(session.ledger, session.id, str(number))
            apply_rewind(
                session.ledger,
                plan,
                files=command.mode != "conversation",
                conversation=command.mode != "files",
                force=command.force,
            )
        except ComalError as exc:
            self.transcript.add_notice(f"✗ {exc}", "error")
            return
        lines = [f"↶ rewound to {plan.label}"]
        if command.mode != "conversation":
            lines += [f"  restored {f.path}" for f in plan.files if f.restorable]
            lines += [
                f"  not restored {f.path}: {f.reason}" for f in plan.files if not f.restorable
            ]
        lines += [f"  not restorable: {line}" for line in plan.not_restorable]
        self.transcript.add_notice("\n".join(lines), "context")
        if command.mode != "files":
            # As in the peers: the message the user went back over is offered again.
            self.query_one(PromptArea).insert(listed[number - 1].text)
        self._refresh_context()

    def _show_compaction(self, done: Compaction) -> None:
        if done.queued:
            self.transcript.add_notice(
                "◆ compaction requested: it runs at the turn boundary", "context"
            )
        elif done.refused is not None:
            self.transcript.add_notice(f"◆ {done.refused}", "warning")
        elif done.failed is not None:
            self.transcript.add_notice(f"✗ compaction failed: {done.failed}", "error")
        elif (cp := done.checkpoint) is not None:
            self.transcript.add_notice(
                f"◆ checkpoint #{cp.number} · {cp.title} · ~{cp.before_tokens:,} →"
                f" ~{cp.after_tokens:,} tokens",
                "context",
            )
