"""The plugin contract: what a plugin contributes and what it may be given.

A plugin is a Python entry point in the group `comal.plugins` whose object is a factory
`(PluginContext) -> Plugin`. It contributes:

- tools (schemas and handlers, ordinary `Tool`s);
- recovery adapters, by tool name: a `Reconciler` settles a call of that tool that started and
  left no result, from a fresh observation (never by re-running an effect). A plugin tool
  without one stays `uncertain` on resume, like Bash or MCP;
- finish checks: `finish_call` runs them after the project's configured checks, and the session
  closes only if every one passes.

Invariants: a plugin never touches the ledger. What it needs from the session's history comes
through `RecordedCall` values (read by the agent), and what it observes goes back as a
`Reconciliation` the agent records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from comal.messages import JSONObject, JSONValue, MediaPart
from comal.tools.base import Tool, ToolContext

PLUGIN_GROUP = "comal.plugins"
"""The entry-point group plugins register under."""


@dataclass(frozen=True, slots=True)
class PluginContext:
    """What a plugin factory is given when the session loads it."""

    workspace: Path
    state_dir: Path
    """A directory of the plugin's own (under Comal's home), for process state and logs."""
    settings: Mapping[str, JSONValue]
    """The plugin's table from the configuration (`[plugins.NAME]`), without `enabled`."""
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One recorded call of the session, as a plugin sees it (read from the ledger)."""

    call_id: str
    name: str
    arguments: JSONObject
    status: str
    """The result's status (`ok`, `error`, `postcondition_observed`, `uncertain`, …)."""
    observed: JSONObject
    """The result's `observed` object (empty when it has none)."""


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """How one plugin finish check ended."""

    name: str
    passed: bool
    detail: str


class FinishCheck(Protocol):
    """A check `finish_call` runs before the session may close."""

    name: str

    def check(self, calls: Sequence[RecordedCall]) -> CheckOutcome:
        """Judge the session's recorded calls."""
        ...


ReconcileStatus = Literal["postcondition_observed", "uncertain", "repeated"]


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """What a fresh observation says about a call that left no result."""

    status: ReconcileStatus
    """`postcondition_observed` (the intended state is observed), `uncertain` (not observed,
    or blocked: the text says what would be needed), or `repeated` (a read-only call whose
    known reads were made again)."""
    text: str
    observed: JSONObject
    media: tuple[MediaPart, ...] = ()


class Reconciler(Protocol):
    """A plugin's recovery adapter for one tool."""

    async def reconcile(
        self, started: JSONObject, ctx: ToolContext, history: Sequence[RecordedCall]
    ) -> Reconciliation:
        """Observe the world now and settle the call whose `tool.started` payload is `started`.

        Must not repeat an effect: only reads, and reads the call itself declared.
        """
        ...


@dataclass(slots=True)
class Plugin:
    """What one loaded plugin contributes."""

    name: str
    tools: Sequence[Tool] = ()
    reconcilers: Mapping[str, Reconciler] = field(default_factory=dict)
    checks: Sequence[FinishCheck] = ()
    description: str = ""


class PluginFactory(Protocol):
    """The object an entry point names."""

    def __call__(self, ctx: PluginContext) -> Plugin:
        """Build the plugin for one session."""
        ...
