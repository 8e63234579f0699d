"""The MCP SDK side of `comal.tools.mcp`: one connection task per server, and its tools.

Each server lives in its own asyncio task, which enters the SDK `Client` (and, for stdio, the
server process in its own process group) and leaves it in that same task, as the SDK's anyio
task groups require. A server that dies mid-session ends only its own task: its tools then
answer with an error outcome, and the session goes on.

Invariants:
- Starting never raises: a failure becomes an `McpServerFailure` naming the server and the
  cause, with the tail of what the server wrote to stderr in this run. A `url` server that
  refuses Comal (HTTP 401/403) is reported with that status and the setting to check
  (`mcp_servers.NAME.headers`), never a header value: the SDK alone says only that the server
  "returned an error response".
- A call never raises: transport errors, timeouts, a dead server and cancellation (Esc) come
  back as error outcomes that say the effect is unknown where it is.
- A stdio server's stdout lines that are not JSON-RPC (a banner, a stray print) are written to
  that server's log, never to Comal's stderr: the SDK's per-line traceback is filtered out, and
  the session gets one notice naming the log. The filter finds the server through a context
  variable the connection task sets, which the SDK's reader task inherits.
- A tool that needs a capability Comal lacks (task-augmented execution,
  `execution.taskSupport: "required"`) is not offered: every call would fail; a notice names it.
- `outcome_from_result` keeps what the server returned: text blocks joined by newlines,
  structured content as canonical JSON when no text block carries it, images as media; other
  blocks (audio, binary resources, links) are described by a bracketed note, never invented.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from mcp.types import Tool as RemoteTool

from comal.config import McpServerConfig
from comal.messages import JSONObject, MediaPart, ToolSpec, canonical_json
from comal.tools.base import NoPreparation, Preparation, ToolContext, ToolOutcome, error_outcome
from comal.tools.mcp import (
    McpNotice,
    McpServerFailure,
    McpToolset,
    input_schema,
    mcp_tool_name,
    tool_description,
)

_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
"""What a stdio server inherits from Comal's environment (the MCP SDK's safe set, plus locale
and temp dir); everything else must be given in the server's `env` table."""
_MAX_PAGES = 100
"""tools/list pages read at most: a server whose cursor never ends cannot hang the start."""
_STDERR_TAIL = 600
_AUTH_REFUSALS = (401, 403)
"""HTTP statuses that say the server refused who Comal is (its `headers`), not the request."""
_STRAY_LINE_CHARS = 2_000
"""How much of one stray stdout line is kept in the server's log."""
_SDK_PARSE_FAILURE = "Failed to parse JSONRPC message from server"
"""The SDK's log message for a stdout line that is not JSON-RPC (logged with a traceback)."""
_UNSUPPORTED_TASK_SUPPORT = "required"
"""A tool whose `execution.taskSupport` is this can only be called as a task."""

_link_of_task: contextvars.ContextVar[McpServerLink | None] = contextvars.ContextVar(
    "comal_mcp_link", default=None
)


def _stray_line(record: logging.LogRecord) -> str:
    """The stdout line an SDK parse failure was about (pydantic keeps it as the input)."""
    exc = record.exc_info[1] if record.exc_info else None
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            found = errors()
        except Exception:  # noqa: BLE001 - any shape: fall back to the message
            found = []
        if found and isinstance(found[0], dict) and isinstance(found[0].get("input"), str):
            return str(found[0]["input"])
    return str(exc) if exc is not None else record.getMessage()


class _StrayStdoutFilter(logging.Filter):
    """Routes the SDK's parse failures to the server they came from, off Comal's stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _SDK_PARSE_FAILURE:
            return True
        link = _link_of_task.get()
        if link is not None:
            link.note_stray_line(_stray_line(record))
        return False


_STRAY_FILTER = _StrayStdoutFilter()


def _install_stray_filter() -> None:
    logger = logging.getLogger("mcp.client.stdio")
    if _STRAY_FILTER not in logger.filters:
        logger.addFilter(_STRAY_FILTER)


def needs_missing_capability(tool: RemoteTool) -> str | None:
    """Why Comal cannot call `tool` (a capability it lacks), or None when it can."""
    execution = tool.execution
    if execution is not None and execution.task_support == _UNSUPPORTED_TASK_SUPPORT:
        return "needs task-augmented execution (execution.taskSupport: required)"
    return None


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException) -> str:
    """One line for an SDK or transport error."""
    leaf = _leaf(exc)
    if isinstance(leaf, MCPError):
        return leaf.message
    text = str(leaf).strip()
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def outcome_from_result(result: CallToolResult) -> ToolOutcome:
    """The outcome of a `tools/call` result (see the module invariants)."""
    texts: list[str] = []
    media: list[MediaPart] = []
    has_text = False
    for block in result.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
            has_text = True
        elif isinstance(block, ImageContent):
            media.append(MediaPart(block.mime_type, block.data))
        elif isinstance(block, AudioContent):
            texts.append(f"[audio {block.mime_type}: {len(block.data):,} base64 chars not shown]")
        elif isinstance(block, EmbeddedResource):
            inner = block.resource
            if isinstance(inner, TextResourceContents):
                texts.append(inner.text)
                has_text = True
            elif isinstance(inner, BlobResourceContents):
                kind = inner.mime_type or "binary"
                texts.append(f"[resource {inner.uri} ({kind}): {len(inner.blob):,} base64 chars]")
        elif isinstance(block, ResourceLink):
            texts.append(f"[resource link: {block.uri} {block.name}]".rstrip())
    if result.structured_content is not None and not has_text:
        texts.append(canonical_json(result.structured_content))
    output = "\n".join(texts).encode("utf-8", errors="surrogateescape")
    if result.is_error:
        return ToolOutcome(output, is_error=True, media=tuple(media), status="error")
    return ToolOutcome(output, media=tuple(media))


class McpServerLink:
    """One configured server: its connection task and the calls made through it.

    Args:
        config: the server's configuration.
        env: Comal's environment (a minimal part is inherited by stdio servers).
        cwd: the working directory of a stdio server.
        log_dir: where the server's stderr goes; None discards it.
    """

    def __init__(
        self, config: McpServerConfig, env: Mapping[str, str], cwd: Path, log_dir: Path | None
    ) -> None:
        self.config = config
        self.name = config.name
        self._env = env
        self._cwd = cwd
        self._log_path = None if log_dir is None else log_dir / f"mcp-{config.name}.log"
        self._log_start = 0
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._gone = asyncio.Event()
        self._ended: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._refused: str | None = None
        """The first HTTP 401/403 the server answered ("401 Unauthorized"), else None."""
        self._log: TextIO | None = None
        self.stray_lines = 0
        """Stdout lines of this run that were not MCP messages (kept in the log)."""

    def _stdio_env(self) -> dict[str, str]:
        base = {k: self._env[k] for k in _INHERITED_ENV if k in self._env}
        return base | dict(self.config.env)

    def _open_log(self, stack: AsyncExitStack) -> TextIO:
        if self._log_path is None:
            return stack.enter_context(Path(os.devnull).open("w", encoding="utf-8"))
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        log = stack.enter_context(self._log_path.open("a", encoding="utf-8"))
        self._log_start = log.tell()
        self._log = log
        return log

    def note_stray_line(self, line: str) -> None:
        """Keep a stdout line that is not an MCP message in the server's log."""
        self.stray_lines += 1
        log = self._log
        if log is None or log.closed:
            return
        # The server's stderr shares this file (opened for appending): each write lands whole.
        log.write(f"[comal: stdout line that is not MCP, ignored] {line[:_STRAY_LINE_CHARS]}\n")
        log.flush()

    def stray_notice(self) -> McpNotice | None:
        """The one notice about stray stdout lines, when there were any at start."""
        if not self.stray_lines:
            return None
        where = f"; they are in {self._log_path}" if self._log_path is not None else ""
        return McpNotice(
            self.name,
            f"MCP server {self.name!r} wrote {self.stray_lines} stdout line(s) that are not MCP"
            f" messages; they were ignored{where}",
        )

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr in this run ("" when none or discarded)."""
        if self._log_path is None or not self._log_path.is_file():
            return ""
        with self._log_path.open("rb") as fh:
            fh.seek(self._log_start)
            data = fh.read()
        text = data.decode("utf-8", "replace").strip()
        return text[-_STDERR_TAIL:]

    def refusal(self) -> str | None:
        """Why a `url` server refused Comal, naming the setting to check; None when it did not."""
        if self._refused is None:
            return None
        return f"HTTP {self._refused} (check mcp_servers.{self.name}.headers)"

    async def _note_refusal(self, response: httpx2.Response) -> None:
        if response.status_code in _AUTH_REFUSALS and self._refused is None:
            self._refused = f"{response.status_code} {response.reason_phrase}".strip()

    def _sse_http_client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """The SSE transport's HTTP client, noting 401/403 like the Streamable HTTP one."""
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(self.config.startup_timeout_s),
            auth=auth,
            follow_redirects=True,
            event_hooks={"response": [self._note_refusal]},
        )

    async def _enter_client(self, stack: AsyncExitStack) -> Client:
        cfg = self.config
        if cfg.command is not None:
            params = StdioServerParameters(
                command=cfg.command, args=list(cfg.args), env=self._stdio_env(), cwd=self._cwd
            )
            transport = stdio_client(params, errlog=self._open_log(stack))
        elif cfg.transport == "sse":
            assert cfg.url is not None  # the configuration requires command or url
            transport = sse_client(
                cfg.url,
                headers=dict(cfg.headers),
                timeout=cfg.startup_timeout_s,
                sse_read_timeout=cfg.timeout_s,
                httpx_client_factory=self._sse_http_client,
            )
        else:
            assert cfg.url is not None  # the configuration requires command or url
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(cfg.headers),
                    timeout=httpx2.Timeout(cfg.startup_timeout_s, read=cfg.timeout_s),
                    event_hooks={"response": [self._note_refusal]},
                )
            )
            transport = streamable_http_client(cfg.url, http_client=http)
        client = Client(transport, cache=None)
        return await stack.enter_async_context(client)

    async def _serve(self, ready: asyncio.Future[list[RemoteTool]]) -> None:
        # The SDK's reader task, started inside, inherits this: its parse failures find us.
        _link_of_task.set(self)
        try:
            async with AsyncExitStack() as stack:
                client = await self._enter_client(stack)
                tools: list[RemoteTool] = []
                cursor: str | None = None
                for _ in range(_MAX_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                self._client = client
                ready.set_result(tools)
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - any server failure is reported, never raised
            if not ready.done():
                ready.set_exception(exc)
            else:
                self._ended = describe_error(exc)
        finally:
            self._client = None
            self._log = None
            if self._ended is None:
                self._ended = "it has stopped"
            self._gone.set()

    async def start(self) -> list[RemoteTool]:
        """Start the connection task and wait for the tool list.

        Raises:
            Exception: whatever stopped the server from starting (the caller reports it).
        """
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[list[RemoteTool]] = loop.create_future()
        self._task = asyncio.create_task(self._serve(ready), name=f"mcp-{self.name}")
        try:
            return await asyncio.wait_for(ready, self.config.startup_timeout_s)
        except TimeoutError as exc:
            raise TimeoutError(
                f"no tool list within {self.config.startup_timeout_s:g} s (startup_timeout_s)"
            ) from exc

    async def aclose(self) -> None:
        """Stop the connection (closing the server's stdin, then ending its process group)."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if self._client is None:
            task.cancel()  # still starting: nothing to say goodbye to
        # The task reports its own failures; whatever it ended with is not the caller's error.
        await asyncio.gather(task, return_exceptions=True)

    async def call(
        self, remote_name: str, arguments: JSONObject, cancel: asyncio.Event | None
    ) -> ToolOutcome:
        """Call `remote_name` on the server; every failure is an error outcome."""
        client = self._client
        if client is None:
            return error_outcome(
                f"MCP server {self.name!r} is not available ({self._ended or 'not started'});"
                f" {remote_name} was not called"
            )
        call = asyncio.ensure_future(
            client.call_tool(
                remote_name, dict(arguments), read_timeout_seconds=self.config.timeout_s
            )
        )
        watchers = [asyncio.ensure_future(self._gone.wait())]
        if cancel is not None:
            watchers.append(asyncio.ensure_future(cancel.wait()))
        try:
            await asyncio.wait([call, *watchers], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (*watchers, call):
                if not waiter.done():
                    waiter.cancel()
            await asyncio.gather(call, *watchers, return_exceptions=True)
        unknown = "whether it had an effect is unknown"
        if call.cancelled():
            why = "the call was cancelled" if cancel and cancel.is_set() else self._ended
            return error_outcome(f"MCP {self.name}/{remote_name}: {why}; {unknown}")
        exc = call.exception()
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            # Later calls are refused up front: they could not reach the server at all.
            self._client = None
            self._ended = "its connection closed"
        if exc is not None:
            return error_outcome(
                f"MCP {self.name}/{remote_name} failed: {describe_error(exc)}; {unknown}"
            )
        return outcome_from_result(call.result())


class McpTool(NoPreparation):
    """A tool of an MCP server, offered to the model as `mcp__<server>__<tool>`."""

    read_only = False

    def __init__(self, link: McpServerLink, spec: ToolSpec, remote_name: str) -> None:
        self.spec = spec
        self.server = link.name
        self.remote_name = remote_name
        self._link = link

    def target(self, arguments: JSONObject) -> str | None:  # noqa: ARG002 - protocol signature
        """The exposed tool name: permission patterns match it like the tool name."""
        return self.spec.name

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:  # noqa: ARG002
        """None known: what a server touches is outside Comal's sight."""
        return ()

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,
        preparation: Preparation | None,  # noqa: ARG002 - protocol signature
    ) -> ToolOutcome:
        """Call the tool on its server."""
        return await self._link.call(self.remote_name, arguments, ctx.cancel)


def _unusable_notice(link: McpServerLink, remote: Sequence[RemoteTool]) -> McpNotice | None:
    reasons = [(t.name, why) for t in remote if (why := needs_missing_capability(t))]
    if not reasons:
        return None
    listed = "; ".join(f"{name} ({why})" for name, why in sorted(reasons))
    return McpNotice(
        link.name,
        f"MCP server {link.name!r}: {len(reasons)} tool(s) not offered, Comal cannot call them:"
        f" {listed}",
    )


def _tools_of(link: McpServerLink, remote: Sequence[RemoteTool]) -> list[McpTool]:
    taken: set[str] = set()
    tools: list[McpTool] = []
    usable = [t for t in remote if needs_missing_capability(t) is None]
    for item in sorted(usable, key=lambda t: t.name):
        name = mcp_tool_name(link.name, item.name, taken)
        taken.add(name)
        schema: dict[str, Any] = dict(item.input_schema or {})
        spec = ToolSpec(
            name,
            tool_description(link.name, item.name, item.description, item.title),
            input_schema(schema),
        )
        tools.append(McpTool(link, spec, item.name))
    return tools


class McpConnections:
    """Every enabled server of a session (see `comal.tools.mcp.open_mcp_servers`)."""

    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        *,
        env: Mapping[str, str],
        cwd: Path,
        log_dir: Path | None,
    ) -> None:
        self._links = [McpServerLink(s, env, cwd, log_dir) for s in servers]
        _install_stray_filter()

    async def _start(
        self, link: McpServerLink
    ) -> tuple[list[McpTool], list[McpNotice]] | McpServerFailure:
        missing = link.config.missing_env
        if missing:
            names = ", ".join(missing)
            return McpServerFailure(
                link.name, f"MCP server {link.name!r} not started: {names} is not set"
            )
        try:
            remote = await link.start()
        except Exception as exc:  # noqa: BLE001 - reported as a failure, the session goes on
            await link.aclose()
            cause = describe_error(exc)
            refusal = link.refusal()
            if refusal is not None:
                cause = f"{refusal}; {cause}"
            message = f"MCP server {link.name!r} is unavailable: {cause}"
            tail = link.stderr_tail()
            if tail:
                message += f"; its stderr ends with: {tail}"
            return McpServerFailure(link.name, message)
        notices = [n for n in (link.stray_notice(), _unusable_notice(link, remote)) if n]
        return _tools_of(link, remote), notices

    async def start(self) -> McpToolset:
        """Start every server at once; the toolset lists tools and failures in server order."""
        started = await asyncio.gather(*(self._start(link) for link in self._links))
        tools: list[McpTool] = []
        failures: list[McpServerFailure] = []
        notices: list[McpNotice] = []
        for item in started:
            if isinstance(item, McpServerFailure):
                failures.append(item)
            else:
                tools.extend(item[0])
                notices.extend(item[1])
        return McpToolset(tuple(tools), tuple(failures), tuple(notices))

    async def aclose(self) -> None:
        """Shut every server down (in parallel; each shutdown is bounded by the SDK)."""
        await asyncio.gather(*(link.aclose() for link in self._links))
