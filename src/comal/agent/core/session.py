"""A live session: the ledger, the provider, the tools and the context engine wired together.

`Session` holds no conversation state of its own: everything it knows about the conversation
is read back from the ledger by the context engine. Opening a session (new or resumed) takes
its lock first, so two live processes never write one session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol

from comal.agent.core.events import AgentEvent, Notice, SessionOpened, ToolOutput, ToolStarted
from comal.agent.core.instructions import load_instructions
from comal.agent.core.plugins import PLUGIN_WARNING, LoadedPlugins, record_plugins
from comal.agent.core.prompt import SYSTEM_PROMPT
from comal.agent.core.tool_catalog import MCP_NOTICE, MCP_WARNING, record_tool_catalog
from comal.agent.core.tool_runner import CallReceipt, ToolRunner, call_summary
from comal.agent.core.toolset import session_tools
from comal.agent.features.hooks import Hooks
from comal.config import Config
from comal.context.engine import ContextEngine, EngineSettings, FixedParts
from comal.context.factory import ModelWindow, engine_for
from comal.context.factory import engine_settings as settings_for
from comal.context.measure.anchors import Fingerprint, tools_digest
from comal.context.view.entry import DEFAULT_LARGE_OUTPUT_BYTES
from comal.ledger.entry import Entry
from comal.ledger.records import (
    Kind,
    Record,
    RecordedWindow,
    SessionConfigured,
    SessionFinished,
    SessionResumed,
    SessionStarted,
    WarningRecord,
)
from comal.ledger.store import Ledger
from comal.messages import JSONObject, ToolCallPart, canonical_json
from comal.providers.base import Provider
from comal.providers.catalog import known_not_to_reason
from comal.session import index_status, usage_totals
from comal.tools.base import Tool, ToolContext, ToolRegistry
from comal.tools.mcp import McpNotice, McpServerFailure, is_mcp_tool
from comal.tools.permissions import AskHook, PermissionPolicy
from comal.tools.sandbox import session_sandbox
from comal.tools.secrets import command_env, find_secrets

EmitFn = Callable[[AgentEvent], None]


def _ignore(_: AgentEvent) -> None:
    return None


@dataclass(slots=True)
class SessionOptions:
    """How to run: limits and front-end facts that are not configuration files."""

    max_turns: int = 50
    interactive: bool = False
    reasoning_effort: str | None = None
    max_output_tokens: int | None = None
    """Explicit output reserve (`--max-output-tokens`); None lets the engine size it."""
    emit: EmitFn = field(default=_ignore)
    ask: AskHook | None = None
    """Confirms `ask` permission verdicts (the TUI's prompt); None denies them."""
    cancel: asyncio.Event | None = None
    """Set by an interactive front end to stop the running tool call (Esc)."""
    mcp_failures: tuple[McpServerFailure, ...] = ()
    """Configured MCP servers that did not start; recorded as warnings when the session opens."""
    plugins: LoadedPlugins = field(default_factory=LoadedPlugins)
    """The plugins this process loaded (and those that failed, reported when it opens)."""
    mcp_notices: tuple[McpNotice, ...] = ()
    """What started MCP servers need said once (stray stdout, tools not offered); recorded as
    warnings when the session opens."""
    max_tokens: int | None = None
    """Token budget of a child session (measured input + output); None: no budget."""
    system_append: str = ""
    """Text added at the end of the system prompt (`--append-system-prompt`)."""


class BoundTools(Protocol):
    """Tools bound to the session being opened (delegation: Task, WorkStepRun, WorkDraft)."""

    def tools(self, session_id: str) -> list[Tool]:
        """The tools to offer in session `session_id`."""
        ...

    def attach(self, session: Session) -> None:
        """Called once the session is wired (its runner, options and engine exist)."""
        ...


@dataclass(slots=True)
class Session:
    """Everything one run of the loop needs."""

    id: str
    ledger: Ledger
    provider: Provider
    runner: ToolRunner
    engine: ContextEngine
    options: SessionOptions
    tools_digest: str
    config_digest: str

    def write(self, record: Record, body: bytes | None = None) -> Entry:
        """Append one record to this session's ledger."""
        return self.ledger.append_record(self.id, record, body=body)

    def finished_answer(self) -> str | None:
        """The answer of a successful finish_call once the session is closed, else None."""
        if self.ledger.session(self.id).status != "finished":
            return None
        for entry in reversed(self.ledger.entries(self.id, kinds=(Kind.SESSION_FINISHED,))):
            return SessionFinished.from_entry(entry).answer
        return ""

    def emit(self, event: AgentEvent) -> None:
        """Send an event to the front end."""
        self.options.emit(event)

    def tokens_used(self) -> int:
        """Tokens this session has used: measured input + output, Comal's estimate where the
        provider measured nothing (what a child's `max_tokens` budget counts)."""
        totals = usage_totals(self.ledger.entries(self.id))
        measured = totals.measured
        return (measured.total_input or 0) + (measured.output or 0) + totals.estimated_input_tokens

    def _parallel(self, call: ToolCallPart) -> bool:
        tool = self.runner.registry.get(call.name)
        return getattr(tool, "parallel", False) is True

    async def run_calls(self, calls: Sequence[ToolCallPart]) -> None:
        """Run the calls of one assistant message in order; consecutive calls of parallel tools
        (Task) run together. Each call is recorded on its own, so the view (which orders results
        by call) and recovery see the same thing whatever order they finish in."""
        index = 0
        while index < len(calls):
            group = [calls[index]]
            while (
                self._parallel(group[0])
                and index + len(group) < len(calls)
                and self._parallel(calls[index + len(group)])
            ):
                group.append(calls[index + len(group)])
            if len(group) == 1:
                await self.run_call(group[0])
            else:
                await asyncio.gather(*(self.run_call(call) for call in group))
            index += len(group)

    async def run_call(self, call: ToolCallPart) -> CallReceipt:
        """Run one tool call through the runner (which records it), telling the front end."""
        self.emit(ToolStarted(call.call_id, call.name, call_summary(call)))
        receipt = await self.runner.run(call)
        self.emit(receipt)
        return receipt


def _config_digest(config: Config, instructions: str) -> str:
    """Digest of the configuration a measured anchor depends on."""
    settings: JSONObject = {
        "threshold": config.context.threshold_ratio,
        "large": config.context.large_output_threshold_bytes or DEFAULT_LARGE_OUTPUT_BYTES,
        "instructions": instructions,
    }
    if config.context.large_output_threshold_bytes is None:
        # Large outputs enter whole while they fit the window's share (context/view/entry.py).
        settings["entry"] = "window-share"
    if config.context.soft_limit is not None:
        # Only when set, so sessions recorded before the setting existed keep their anchors.
        settings["soft_limit"] = config.context.soft_limit
    return "sha256:" + hashlib.sha256(canonical_json(settings).encode()).hexdigest()


def model_window(provider: Provider) -> ModelWindow:
    """What the provider's model offers the context engine."""
    caps = provider.capabilities
    return ModelWindow(caps.context_window, caps.window_source, caps.max_output_tokens, caps.vision)


def engine_settings(config: Config, provider: Provider, options: SessionOptions) -> EngineSettings:
    """Context-engine settings from the provider's capabilities and the configuration."""
    return settings_for(model_window(provider), config.context, reserve=options.max_output_tokens)


SANDBOX_WARNING = "SANDBOX_UNAVAILABLE"
"""Notice code when bubblewrap cannot confine Bash (said once, at session open)."""
EFFORT_WARNING = "EFFORT_NOT_SENT"
"""The notice when an effort was asked of a model known not to reason (`catalog.reasoning`)."""


def _effort_unsent(provider: Provider, options: SessionOptions) -> bool:
    return bool(options.reasoning_effort) and known_not_to_reason(provider.model)


def effort_note(model: str, effort: str) -> str:
    """The one warning said when an effort is dropped for a model that does not reason."""
    return f"{model} is known not to reason: effort {effort!r} is not sent"


def _window(provider: Provider) -> RecordedWindow:
    """The `window` field of the entries that say what a session runs on."""
    caps = provider.capabilities
    return RecordedWindow(caps.context_window, caps.window_source)


def _told_output(emit: EmitFn, call_id: str, chunk: bytes) -> None:
    """A running command's new output, to the front ends' progress (never recorded here)."""
    emit(ToolOutput(call_id, chunk.decode("utf-8", errors="replace")))


def open_session(
    ledger: Ledger,
    config: Config,
    provider: Provider,
    tools: list[Tool],
    options: SessionOptions,
    *,
    session_id: str | None = None,
    workspace: Path | None = None,
    child: bool = False,
    bound: BoundTools | None = None,
) -> Session:
    """Create a new session (or reopen `session_id`), take its lock and wire its parts.

    Args:
        child: the session is a child (sub-agent): it gets EvidenceRead but no board or
            finish_call; `session_id` must already exist.
        bound: delegation tools to offer, bound to this session once it is open.

    Raises:
        SessionLockedError: another live process holds the session.
        UnknownSessionError: `session_id` does not exist.
    """
    workspace = workspace or config.workspace
    resumed = session_id is not None
    unsent_effort = options.reasoning_effort if _effort_unsent(provider, options) else None
    if unsent_effort is not None:
        options.reasoning_effort = None  # never sent, and not part of the anchor's fingerprint
    if session_id is None:
        session_id = ledger.create_session(cwd=str(workspace), model=provider.model)
        ledger.acquire_lock(session_id)
        started = SessionStarted(
            cwd=str(workspace),
            provider=provider.name,
            wire=str(provider.wire),
            model=provider.model,
            window=_window(provider),
            source="comal",
            vision=provider.capabilities.vision,
        )
        ledger.append_record(session_id, started)
    else:
        ledger.session(session_id)
        ledger.acquire_lock(session_id)
        # The new holder indexes the status the entries derive: no turn of it runs yet, and
        # the row may be what a crashed holder left behind.
        index_status(ledger, session_id, running=False)
        # What the session runs on from now on: reports of the recorded session (`comal
        # context`) use this window and model, not the ones it started (or was imported) with.
        resumed_on = SessionResumed(
            provider.name, str(provider.wire), provider.model, _window(provider)
        )
        ledger.append_record(session_id, resumed_on)
    permissions = PermissionPolicy(config.permissions, workspace, ask=options.ask)
    # Commands and hooks never see a key; outputs are scanned for the keys' values.
    secrets = find_secrets(config.env, config.key_names, config.sandbox.env_passthrough)
    context = ToolContext(
        workspace=workspace,
        permissions=permissions,
        env=command_env(config.env, secrets),
        interactive=options.interactive,
        cancel=options.cancel,
        sandbox=session_sandbox(config.permissions.mode, workspace, config.sandbox),
        on_output=partial(_told_output, options.emit),
    )
    offered = {tool.spec.name for tool in tools}
    plugins = options.plugins
    own = session_tools(ledger, session_id, config.checks, plugins.checks, child=child)
    own += [] if bound is None else bound.tools(session_id)
    own = [tool for tool in own if tool.spec.name not in offered]
    # MCP and plugin schemas are budget rows of their own, offered after every native tool.
    mcp = [tool for tool in tools if is_mcp_tool(tool)]
    native = [tool for tool in tools if not is_mcp_tool(tool)]
    extra = [tool for tool in plugins.tools if tool.spec.name not in offered]
    registry = ToolRegistry([*native, *own, *extra, *mcp])
    native_specs = tuple(tool.spec for tool in (*native, *own))
    sid = session_id

    def record(record: Record, body: bytes | None) -> None:
        ledger.append_record(sid, record, body=body)

    observed = frozenset(t.spec.name for t in extra if plugins.reconciler(t.spec.name) is not None)

    def record_entry(record: Record) -> Entry:
        return ledger.append_record(sid, record)

    hooks = None
    if config.hooks:
        hooks = Hooks(
            config.hooks,
            session_id=sid,
            cwd=workspace,
            ledger_path=ledger.location,
            record=record_entry,
            env=command_env(config.env, secrets),
            redact=secrets.redact_text,
        )
    runner = ToolRunner(
        registry,
        permissions,
        context,
        record,
        confirm=options.ask,
        observed=observed,
        hooks=hooks,
        redact=secrets.redact,
    )
    instructions = load_instructions(workspace, config.config_dir)
    system = SYSTEM_PROMPT
    if options.system_append:
        system = f"{SYSTEM_PROMPT.rstrip()}\n\n{options.system_append.strip()}\n"
    fixed = FixedParts(
        system=system,
        instructions=instructions.text,
        tools=native_specs,
        mcp_tools=tuple(tool.spec for tool in mcp),
        plugin_tools=tuple(tool.spec for tool in extra),
        plugin_owners=tuple(
            (tool.spec.name, plugins.owner(tool.spec.name) or "") for tool in extra
        ),
    )
    config_digest = _config_digest(config, instructions.text + options.system_append)
    catalog_digest = tools_digest(fixed.all_tools)
    engine = engine_for(
        ledger,
        session_id,
        model_window(provider),
        fixed,
        model=provider.model,
        context=config.context,
        reserve=options.max_output_tokens,
        # Any change of model, effort, tools or configuration invalidates a measured anchor.
        fingerprint=Fingerprint(
            provider.model,
            options.reasoning_effort,
            catalog_digest,
            config_digest,
            compare_effort=True,
        ),
    )
    session = Session(
        id=session_id,
        ledger=ledger,
        provider=provider,
        runner=runner,
        engine=engine,
        options=options,
        tools_digest=catalog_digest,
        config_digest=config_digest,
    )
    if bound is not None:
        bound.attach(session)
    sandbox = context.sandbox
    unconfined = ""
    if sandbox is not None and sandbox.unavailable is not None and "Bash" in offered:
        then = "Bash is refused" if sandbox.config.required else "Bash runs unconfined"
        unconfined = f"no sandbox: {sandbox.unavailable}; {then}"
    session.emit(
        SessionOpened(
            session_id=session_id,
            model=provider.model,
            provider=provider.name,
            window_tokens=provider.capabilities.context_window,
            window_source=provider.capabilities.window_source,
            resumed=resumed,
            sandbox=unconfined,
        )
    )
    if mcp or options.mcp_failures or any(s.enabled for s in config.mcp_servers.values()):
        record_tool_catalog(ledger, session_id, native_specs, mcp, options.mcp_failures)
        for failure in options.mcp_failures:
            session.emit(Notice(MCP_WARNING, failure.message))
    if unconfined:
        session.emit(Notice(SANDBOX_WARNING, unconfined))
    if unsent_effort is not None:
        note = effort_note(provider.model, unsent_effort)
        ledger.append_record(session_id, WarningRecord(EFFORT_WARNING, note))
        session.emit(Notice(EFFORT_WARNING, note))
    for notice in options.mcp_notices:
        ledger.append_record(session_id, WarningRecord(MCP_NOTICE, notice.message))
        session.emit(Notice(MCP_NOTICE, notice.message))
    if plugins.plugins or plugins.failures:
        record_plugins(ledger, session_id, plugins)
        for plugin_failure in plugins.failures:
            session.emit(Notice(PLUGIN_WARNING, plugin_failure.message))
    return session


def reconfigure(
    session: Session,
    config: Config,
    *,
    provider: Provider | None = None,
    effort: str | None = None,
    keep_effort: bool = True,
) -> Entry:
    """Switch the model (`provider`) and/or the reasoning effort from the next model call on.

    The context engine is rebuilt for the new model (its window, counter and calibration) with
    the new fingerprint, so the measured anchor of an earlier request no longer applies; the
    reasoning of the former model is never replayed to the new one (`providers/reasoning.py`).
    The change is recorded as `session.configured`.
    """
    provider = provider or session.provider
    if not keep_effort:
        session.options.reasoning_effort = effort
    unsent = session.options.reasoning_effort
    if unsent and known_not_to_reason(provider.model):
        session.options.reasoning_effort = None
        note = effort_note(provider.model, unsent)
        session.write(WarningRecord(EFFORT_WARNING, note))
        session.emit(Notice(EFFORT_WARNING, note))
    session.provider = provider
    old = session.engine
    session.engine = engine_for(
        session.ledger,
        session.id,
        model_window(provider),
        old.fixed,
        model=provider.model,
        context=config.context,
        reserve=session.options.max_output_tokens,
        fingerprint=dataclasses.replace(
            old.fingerprint, model=provider.model, effort=session.options.reasoning_effort
        ),
    )
    configured = SessionConfigured(
        provider.name,
        str(provider.wire),
        provider.model,
        session.options.reasoning_effort,
        _window(provider),
    )
    return session.write(configured)
