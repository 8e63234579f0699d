"""The tool contract: what a tool is, what it returns, and the registry the loop asks.

A call goes through four steps, driven by the agent loop:

1. `validate_arguments(tool.spec, arguments)` rejects malformed arguments before anything else.
2. `ctx.permissions.authorize(tool, arguments, interactive=...)` decides allow/deny; the
   decision and its reason belong in the receipt.
3. `await tool.prepare(arguments, ctx)` — Write/Edit only — works out the digest before and the
   digest intended *without touching the file*, so the loop can append a durable preparation
   before the effect. Bad input raises `ToolError` here and nothing is written.
4. `await tool.run(arguments, ctx, preparation)` performs the effect and returns a
   `ToolOutcome`. `run` never raises `ToolError`: failures it can describe come back as an
   error outcome whose `output` explains them.

Invariants: `ToolOutcome.output` holds exactly the bytes the tool returned (a command's
combined output byte for byte, plus any note the tool itself appended, such as a truncation
notice), so the ledger can store it verbatim and `render_outcome` derives safe text from it.
Every path a tool touches is resolved by `resolve_path`, the same function the permission
policy uses, so what was checked is what is touched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from comal.errors import ToolError
from comal.messages import JSONObject, MediaPart, ToolSpec, render_output_text
from comal.tools.schema import validate_arguments

if TYPE_CHECKING:
    from comal.tools.permissions import PermissionPolicy
    from comal.tools.sandbox import Sandbox

__all__ = [
    "Observation",
    "PermissionDecision",
    "Preparation",
    "Rebuildable",
    "RecoveryAdapter",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolRegistry",
    "error_outcome",
    "render_outcome",
    "resolve_path",
    "validate_arguments",
]

OutcomeStatus = Literal["ok", "error", "denied"]


@dataclass(frozen=True, slots=True)
class Preparation:
    """The durable preparation of a Write/Edit, recorded before the file is touched."""

    path: str
    """The path as the model gave it (relative to the workspace or absolute)."""
    abs_path: str
    """The resolved absolute path (symlinks and `..` resolved) that will be written."""
    digest_before: str | None
    """`sha256:<hex>` of the file as read during preparation; None when it did not exist."""
    digest_intended: str
    """`sha256:<hex>` of the bytes the file will hold once the call succeeds."""
    intent: JSONObject | None = None
    """What else a plugin tool declares before acting (target, URL, per-file digests), so
    recovery can compare a fresh observation with it."""
    before: bytes | None = field(default=None, compare=False, repr=False)
    """The exact bytes read during preparation (None when absent or not kept): recorded with
    the preparation so a rewind can restore the file byte for byte."""


@dataclass(frozen=True, slots=True)
class Observation:
    """A fresh read made during recovery, compared with a preparation's intended digest."""

    matches_intended: bool
    current_digest: str | None
    """Digest of the file now; None when it is absent or unreadable."""
    readable: bool
    detail: str


@dataclass(frozen=True, slots=True)
class OutputCut:
    """An output cut at a tool's size limit: the receipt records both sizes."""

    limit_bytes: int
    total_bytes: int


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool returned: exact output bytes plus status."""

    output: bytes
    is_error: bool = False
    exit_code: int | None = None
    """A command's exit code; None for tools that have none, or when it was killed."""
    media: tuple[MediaPart, ...] = ()
    status: OutcomeStatus = "ok"
    cut: OutputCut | None = None
    """Set when the output exceeded the tool's limit and only its start was kept."""
    observed: JSONObject | None = None
    """Structured facts the tool observed (a plugin's snapshot), recorded as the result's
    `observed` object."""


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """The permission verdict for one call; recorded in the call's receipt."""

    decision: Literal["allow", "deny", "ask"]
    mode: str
    reason: str

    @property
    def allowed(self) -> bool:
        """True when the call may run."""
        return self.decision == "allow"


@dataclass(slots=True)
class ToolContext:
    """Everything a tool may use besides its arguments."""

    workspace: Path
    permissions: PermissionPolicy
    env: Mapping[str, str]
    """The environment commands run with (normally `Config.env`)."""
    cancel: asyncio.Event | None = None
    """Set to stop a running call (Esc in the TUI); Bash kills its process group."""
    interactive: bool = False
    call_id: str = ""
    """The provider id of the call being run (set per call by the runner; "" outside one)."""
    sandbox: Sandbox | None = None
    """How Bash is confined; None runs it unconfined (`full-access`)."""
    on_output: Callable[[str, bytes], None] | None = None
    """Told (call id, bytes) as a running command's output arrives: progress only, never the
    result (which the tool returns whole)."""


class Tool(Protocol):
    """A native tool the model can call."""

    spec: ToolSpec
    read_only: bool
    """True when the tool changes nothing outside the session's ledger, and what it records
    there is idempotent: it is allowed in `read-only` mode, and recovery runs a call of it
    again when the process stopped before its result (`agent/core/recovery.py`)."""

    def target(self, arguments: JSONObject) -> str | None:
        """The main argument permission rules match on (a path or a command)."""
        ...

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:
        """The filesystem paths the call touches, as given, for workspace checks."""
        ...

    async def prepare(self, arguments: JSONObject, ctx: ToolContext) -> Preparation | None:
        """Compute the durable preparation without side effects (None for most tools).

        Raises:
            ToolError: the call cannot succeed as asked (e.g. an edit that does not match).
        """
        ...

    async def run(
        self, arguments: JSONObject, ctx: ToolContext, preparation: Preparation | None
    ) -> ToolOutcome:
        """Perform the call. Describable failures come back as error outcomes."""
        ...


@runtime_checkable
class RecoveryAdapter(Protocol):
    """Lets recovery credit a started call from a fresh read instead of re-running it."""

    def observe(self, preparation: Preparation, ctx: ToolContext) -> Observation:
        """Read the prepared path now and compare it with the intended digest."""
        ...


@runtime_checkable
class Rebuildable(Protocol):
    """A tool whose interrupted call recovery finishes from what the ledger recorded.

    Tools that run child sessions are such tools: a finished child is not run again, its
    exact receipt is read back; an unfinished one resumes by the rules of any session.
    """

    async def rebuild(self, arguments: JSONObject, ctx: ToolContext) -> ToolOutcome:
        """Finish the call `ctx.call_id` from the ledger, repeating no recorded effect."""
        ...


FILE_PATH: JSONObject = {
    "type": "string",
    "description": "File path, relative to the workspace or absolute.",
}
"""The schema of a file tool's `path` argument (Read, Write, Edit): one wording for all."""


class PathArgument:
    """Base for tools that act on the file or directory named by their `path` argument.

    Permission rules match on that path; `path_default` is what an absent (or empty) `path`
    means, None when the argument is required.
    """

    path_default: str | None = None

    def target(self, arguments: JSONObject) -> str | None:
        """The path the call names."""
        value = arguments.get("path", self.path_default)
        return value if isinstance(value, str) else None

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:
        """The path the call names, as the permission check resolves it."""
        value = self.target(arguments)
        return () if value is None else (value or self.path_default or value,)


class NoPreparation:
    """Base for tools whose calls need no durable preparation (all but Write and Edit)."""

    async def prepare(
        self,
        arguments: JSONObject,  # noqa: ARG002 - the Tool protocol's signature
        ctx: ToolContext,  # noqa: ARG002
    ) -> Preparation | None:
        """Nothing to prepare: returns None."""
        return None


class ToolRegistry:
    """The tools offered in a session, by name, in a stable order."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register a tool.

        Raises:
            ValueError: a tool with the same name is already registered.
        """
        name = tool.spec.name
        if name in self._tools:
            raise ValueError(f"tool {name!r} is already registered")
        self._tools[name] = tool

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        """Tool names in registration order."""
        return tuple(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The specs to offer the model, in registration order (stable for prompt caching)."""
        return tuple(tool.spec for tool in self._tools.values())

    def recovery(self, name: str) -> RecoveryAdapter | None:
        """The recovery adapter of tool `name`; None when its effects cannot be observed."""
        # Typed as object: a Tool is not declared to be a RecoveryAdapter, only some are.
        tool: object = self._tools.get(name)
        return tool if isinstance(tool, RecoveryAdapter) else None


def resolve_path(workspace: Path, path: str) -> Path:
    """Resolve a tool path against the workspace: absolute, symlinks and `..` resolved.

    Raises:
        ToolError: the path is empty or contains a NUL byte, or it cannot be resolved (a
            folder of it changing while it is read, a symlink loop).
    """
    if not path or "\x00" in path:
        raise ToolError(f"invalid path {path!r}")
    try:
        return (workspace / path).resolve()
    except (OSError, RuntimeError) as exc:
        raise ToolError(f"cannot resolve {path}: {exc}") from exc


def display_path(workspace: Path, resolved: Path) -> str:
    """A resolved path as shown to the model: relative inside the workspace, else absolute."""
    root = workspace.resolve()
    if resolved == root:
        return "."
    if resolved.is_relative_to(root):
        return str(resolved.relative_to(root))
    return str(resolved)


def error_outcome(message: str) -> ToolOutcome:
    """An error outcome carrying `message` as its output."""
    return ToolOutcome(message.encode("utf-8", errors="surrogateescape"), True, status="error")


def text_outcome(text: str) -> ToolOutcome:
    """A successful outcome carrying `text`."""
    return ToolOutcome(text.encode("utf-8", errors="surrogateescape"))


def render_outcome(outcome: ToolOutcome) -> str:
    """The text the model sees for an outcome: safe text, plus a non-zero exit code.

    The ledger keeps `outcome.output` exactly; this is the rendering for the prompt.
    """
    text = render_output_text(outcome.output)
    if outcome.exit_code not in (None, 0):
        sep = "" if not text or text.endswith("\n") else "\n"
        text = f"{text}{sep}[exit code: {outcome.exit_code}]"
    return text


def string_arg(arguments: JSONObject, name: str, default: str | None = None) -> str:
    """A string argument (already schema-checked), or `default`.

    Raises:
        ToolError: the argument is missing or not a string.
    """
    value = arguments.get(name, default)
    if not isinstance(value, str):
        raise ToolError(f"argument {name!r} must be a string")
    return value


def int_arg(arguments: JSONObject, name: str, default: int) -> int:
    """An integer argument, or `default` when absent.

    Raises:
        ToolError: the argument is present but not an integer.
    """
    value = arguments.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"argument {name!r} must be an integer")
    return value
