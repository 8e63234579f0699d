"""`ChromeRecover` (known reads), `ChromeAct` (clicks and fills), `ChromeFinish` (browser checks).

- ChromeRecover makes only reads with known ids (`url`, `title`, `dom_text`,
  `console_errors`, `failed_requests`, `screenshot`) on the governed tab; repeating it cannot
  change anything, so recovery may repeat exactly those reads.
- ChromeAct clicks or fills on the governed tab. Its effect cannot be observed afterwards in
  general, so it has no recovery adapter: an interrupted one stays uncertain, never replayed.
- ChromeFinish runs the task's browser checks (configured `[plugins.chrome] checks`, plus those
  the call declares) on the governed tab; when all pass it closes the task (browser and
  server stopped) and records `browser_checks_passed: true`. `finish_call` refuses to close a
  session that published without such a ChromeFinish (see `GovernedFinish`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import comal.plugins.chrome._browser as br
from comal.errors import ToolError
from comal.messages import JSONObject, JSONValue, MediaPart, ToolSpec
from comal.plugins.chrome._playwright import Page, PlaywrightError
from comal.plugins.chrome._task import TaskNotes, TaskStore
from comal.tools.base import NoPreparation, Preparation, ToolContext, ToolOutcome, error_outcome
from comal.tools.plugin import CheckOutcome, RecordedCall

READ_IDS = (*br.READS, "screenshot")

RECOVER_SPEC = ToolSpec(
    name="ChromeRecover",
    description=(
        "Read-only observations of the governed Chrome tab, by known id: url, title, dom_text, "
        "console_errors, failed_requests, screenshot. Changes nothing."
    ),
    parameters={
        "type": "object",
        "properties": {
            "reads": {"type": "array", "items": {"type": "string", "enum": list(READ_IDS)}}
        },
        "required": ["reads"],
        "additionalProperties": False,
    },
)

ACT_SPEC = ToolSpec(
    name="ChromeAct",
    description=(
        "Click an element or fill a field of the governed Chrome tab (by CSS selector). An "
        "interrupted action is never replayed: check the page with ChromeRecover instead."
    ),
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["click", "fill"]},
            "selector": {"type": "string"},
            "value": {"type": "string"},
        },
        "required": ["action", "selector"],
        "additionalProperties": False,
    },
)

CHECK_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "selector": {"type": "string", "description": "CSS selector that must exist."},
        "text": {"type": "string", "description": "Text the element (or page) must contain."},
        "title": {"type": "string", "description": "Exact page title."},
        "no_console_errors": {"type": "boolean"},
    },
    "additionalProperties": False,
}

FINISH_SPEC = ToolSpec(
    name="ChromeFinish",
    description=(
        "Run the governed task's browser checks (configured ones plus `checks`) on the governed "
        "tab and, when all pass, close the browser task. finish_call still runs the project's "
        "checks; a session that published cannot finish without a passing ChromeFinish."
    ),
    parameters={
        "type": "object",
        "properties": {"checks": {"type": "array", "items": CHECK_SCHEMA}},
        "additionalProperties": False,
    },
)


class _GovernedTool(NoPreparation):
    """A tool over the governed task's tab: it holds the task's notes and matches no rule target."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    def target(self, arguments: JSONObject) -> str | None:  # noqa: ARG002
        """No path or command to match rules on."""
        return None

    def paths(self, arguments: JSONObject) -> tuple[str, ...]:  # noqa: ARG002
        """These calls touch no file."""
        return ()


def governed(store: TaskStore) -> tuple[TaskNotes, int, str]:
    """The governed task's notes, CDP port and tab URL.

    Raises:
        ToolError: no governed tab is open (publish first).
    """
    notes = store.load()
    if notes.cdp_port is None or notes.tab_url is None:
        raise ToolError("no governed Chrome tab is open: call ChromePublish first")
    if not br.cdp_alive(notes.cdp_port):
        raise ToolError(f"the governed browser on CDP port {notes.cdp_port} is not running")
    return notes, notes.cdp_port, notes.tab_url


@dataclass(frozen=True, slots=True)
class GovernedTab:
    """The governed task's notes, its CDP port and tab URL, and the open tab itself."""

    notes: TaskNotes
    cdp: int
    url: str
    page: Page


@asynccontextmanager
async def governed_tab(store: TaskStore) -> AsyncIterator[GovernedTab]:
    """The governed tab, connected for the block.

    Raises:
        ToolError: no governed tab is open (see `governed`), or it is not open any more.
    """
    notes, cdp, url = governed(store)
    async with br.connected(cdp) as browser:
        page = br.find_tab(browser, url)
        if page is None:
            raise ToolError(f"the governed tab {url} is not open any more")
        yield GovernedTab(notes, cdp, url, page)


async def known_reads(store: TaskStore, reads: Sequence[str]) -> ToolOutcome:
    """Make the known reads `reads` on the governed tab."""
    unknown = [r for r in reads if r not in READ_IDS]
    if unknown:
        return error_outcome(f"unknown reads {unknown}; known: {', '.join(READ_IDS)}")
    try:
        async with governed_tab(store) as tab:
            values = await br.read(tab.page, [r for r in reads if r != "screenshot"])
            png = await tab.page.screenshot(type="png") if "screenshot" in reads else None
    except ToolError as exc:
        return error_outcome(exc.message)
    lines = [f"{name}: {values[name]}" for name in values]
    media: tuple[MediaPart, ...] = ()
    observed: JSONObject = {"reads": list(reads), "tab": tab.url, **values}
    if png is not None:
        lines.append(f"screenshot: {len(png):,} bytes (media of this result)")
        media = (MediaPart("image/png", br.b64(png)),)
        observed["screenshot_digest"] = br.digest(png)
    return ToolOutcome("\n".join(lines).encode(), media=media, observed=observed)


def requested_reads(arguments: JSONObject) -> list[str]:
    """The read ids a ChromeRecover call's arguments name."""
    raw = arguments.get("reads")
    return [str(r) for r in raw] if isinstance(raw, list) else []


class ChromeRecoverTool(_GovernedTool):
    """The ChromeRecover tool."""

    spec = RECOVER_SPEC
    read_only = True

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,  # noqa: ARG002
        preparation: Preparation | None,  # noqa: ARG002
    ) -> ToolOutcome:
        """Make the requested known reads."""
        return await known_reads(self.store, requested_reads(arguments))


class ChromeActTool(_GovernedTool):
    """The ChromeAct tool (no recovery adapter, on purpose)."""

    spec = ACT_SPEC
    read_only = False

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,  # noqa: ARG002
        preparation: Preparation | None,  # noqa: ARG002
    ) -> ToolOutcome:
        """Click or fill once."""
        selector = str(arguments.get("selector", ""))
        action = arguments.get("action")
        try:
            async with governed_tab(self.store) as tab:
                try:
                    if action == "fill":
                        value = str(arguments.get("value", ""))
                        await tab.page.fill(selector, value, timeout=10_000)
                    else:
                        await tab.page.click(selector, timeout=10_000)
                except PlaywrightError as exc:
                    return error_outcome(f"{action} {selector} failed: {exc}")
        except ToolError as exc:
            return error_outcome(exc.message)
        return ToolOutcome(f"{action} {selector}: done".encode())


async def _check(page: Page, check: JSONObject, console: list[str]) -> tuple[bool, str]:
    selector, text, title = check.get("selector"), check.get("text"), check.get("title")
    if isinstance(title, str):
        got = await page.title()
        return got == title, f"title is {got!r} (want {title!r})"
    if check.get("no_console_errors"):
        return not console, f"console errors: {console or 'none'}"
    if isinstance(selector, str):
        element = await page.query_selector(selector)
        if element is None:
            return False, f"{selector} not found"
        if isinstance(text, str):
            got = await element.inner_text()
            return text in got, f"{selector} text {got[:200]!r} (want {text!r})"
        return True, f"{selector} found"
    if isinstance(text, str):
        body = str(await page.evaluate("document.body ? document.body.innerText : ''"))
        return text in body, f"page text contains {text!r}: {text in body}"
    return False, f"malformed check {check}"


class ChromeFinishTool(_GovernedTool):
    """The ChromeFinish tool.

    Args:
        store: the governed task's notes.
        checks: the configured browser checks.
    """

    spec = FINISH_SPEC
    read_only = True
    """It reads the page and stops the task's own processes; it changes no file."""

    def __init__(self, store: TaskStore, checks: Sequence[JSONObject]) -> None:
        super().__init__(store)
        self.checks = list(checks)

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,  # noqa: ARG002
        preparation: Preparation | None,  # noqa: ARG002
    ) -> ToolOutcome:
        """Run every browser check; close the task only if all pass."""
        raw = arguments.get("checks")
        declared = [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []
        plan = self.checks + declared
        if not plan:
            return error_outcome(
                "ChromeFinish has no browser check to run: declare `checks` (or configure "
                "[plugins.chrome] checks); the task stays open"
            )
        results: list[JSONValue] = []
        lines: list[str] = []
        passed_all = True
        try:
            async with governed_tab(self.store) as tab:
                console = (await br.read(tab.page, ["console_errors"])).get("console_errors")
                errors = [str(x) for x in console] if isinstance(console, list) else []
                for check in plan:
                    passed, detail = await _check(tab.page, check, errors)
                    passed_all = passed_all and passed
                    results.append({"check": check, "passed": passed, "detail": detail})
                    lines.append(f"{'PASS' if passed else 'FAIL'} {detail}")
        except ToolError as exc:
            return error_outcome(exc.message)
        notes, cdp = tab.notes, tab.cdp
        observed: JSONObject = {
            "browser_checks_passed": passed_all,
            "checks": results,
            "tab": tab.url,
        }
        if not passed_all:
            text = "ChromeFinish: a browser check failed; the task stays open.\n"
            return ToolOutcome(
                (text + "\n".join(lines)).encode(), True, status="error", observed=observed
            )
        await br.close_browser(cdp)
        self.store.stop("browser", cdp)
        self.store.stop("server", notes.server_port)
        self.store.save(TaskNotes())
        text = f"ChromeFinish: all {len(results)} browser checks passed; the task is closed.\n"
        return ToolOutcome((text + "\n".join(lines)).encode(), observed=observed)


class GovernedFinish:
    """finish_call's check: a session that published must end with a passing ChromeFinish."""

    name = "chrome"

    def check(self, calls: Sequence[RecordedCall]) -> CheckOutcome:
        """Pass when no ChromePublish was made, or a passing ChromeFinish followed the last."""
        last_publish = max(
            (i for i, c in enumerate(calls) if c.name == "ChromePublish"), default=None
        )
        if last_publish is None:
            return CheckOutcome("chrome", True, "no governed browser task in this session")
        for call in calls[last_publish + 1 :]:
            if call.name == "ChromeFinish" and call.observed.get("browser_checks_passed"):
                return CheckOutcome("chrome", True, f"ChromeFinish {call.call_id} passed")
        return CheckOutcome(
            "chrome",
            False,
            "the governed Chrome task is not finished: call ChromeFinish (its browser checks "
            "must pass) after the last ChromePublish",
        )
