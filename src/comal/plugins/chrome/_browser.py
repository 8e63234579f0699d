"""The governed browser: Debian's Chromium, headless, driven through Playwright over CDP.

Chromium is started by Comal as its own process (its own session, a fresh profile, no network
services of its own) with a remote-debugging port on loopback, and Playwright connects to it
over CDP (`executable_path`-free: nothing is downloaded, ever). Because the browser is not a
child Playwright owns, it outlives a killed Comal process, and the governed tab can be found
again by its identity — the exact URL the intent recorded, whose fragment carries the task's
token. Console errors are captured inside the page by an init script, so a later process can
read them; failed requests come from the page's own resource timing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from comal.errors import ToolError
from comal.messages import JSONObject, JSONValue
from comal.plugins.chrome._playwright import Browser, Page, PlaywrightError, async_playwright

CHROMIUM_FLAGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Flags for a closed machine: no sandbox helper, no GPU, no background or update traffic."""

INIT_SCRIPT = """
(() => {
  if (window.__comalConsole) return;
  window.__comalConsole = [];
  const push = (text) => window.__comalConsole.push(String(text).slice(0, 2000));
  const original = console.error.bind(console);
  console.error = (...args) => { push(args.map(String).join(' ')); original(...args); };
  window.addEventListener('error', (e) => push(e.message || 'error'));
  window.addEventListener('unhandledrejection', (e) => push('unhandled rejection: ' + e.reason));
})();
"""
"""Keeps the page's console errors in the page itself, readable by any later connection."""

READS: tuple[str, ...] = ("url", "title", "dom_text", "console_errors", "failed_requests")
"""Known read ids besides `screenshot`."""

START_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the governed tab shows now."""

    final_url: str
    title: str
    dom_digest: str
    screenshot: bytes


def free_port() -> int:
    """A loopback port nothing listens on now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def digest(data: bytes) -> str:
    """`sha256:<hex>` of `data`."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def b64(data: bytes) -> str:
    """Base64 text of `data`."""
    return base64.b64encode(data).decode("ascii")


def fetch(url: str, timeout: float = 5.0) -> bytes | None:
    """The bytes served at `url`, or None when nothing answers with 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body: bytes = response.read()
            return body if response.status == 200 else None
    except (OSError, urllib.error.URLError, ValueError):
        return None


def cdp_alive(port: int) -> bool:
    """Whether a browser answers on the CDP port."""
    return fetch(f"http://127.0.0.1:{port}/json/version", timeout=2.0) is not None


def wait_until(test: Callable[[], bool], timeout: float) -> bool:
    """Poll `test()` until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if test():
            return True
        time.sleep(0.1)
    return bool(test())


def spawn_detached(argv: Sequence[str]) -> int:
    """Start `argv` in its own session, stdio on /dev/null; returns its pid.

    The process is meant to outlive this one (that is what lets recovery observe it), so no
    `Popen` object owns it; `TaskStore.stop` ends it and reaps it.

    Raises:
        ToolError: the program cannot be started.
    """
    program = shutil.which(argv[0]) or argv[0]
    actions = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:
        return os.posix_spawn(program, list(argv), os.environ, file_actions=actions, setsid=True)
    except OSError as exc:
        raise ToolError(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc


def launch_browser(executable: str, port: int, profile: Path, pid_file: Path) -> int:
    """Start Chromium headless on CDP `port` with a fresh profile; returns its pid.

    Raises:
        ToolError: the executable is missing or the browser does not answer in time.
    """
    profile.mkdir(parents=True, exist_ok=True)
    command = [
        executable,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        f"--remote-debugging-port={port}",
        "--remote-debugging-address=127.0.0.1",
        "about:blank",
    ]
    pid = spawn_detached(command)
    pid_file.write_text(str(pid), encoding="ascii")
    if not wait_until(lambda: cdp_alive(port), START_TIMEOUT_S):
        os.killpg(pid, signal.SIGKILL)
        raise ToolError(f"{executable} did not answer on CDP port {port} within 30 s")
    return pid


@asynccontextmanager
async def connected(port: int) -> AsyncIterator[Browser]:
    """A Playwright connection to the browser on CDP `port` (the browser stays up after)."""
    async with async_playwright() as pw:
        browser = await pw.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
        yield browser


def find_tab(browser: Browser, url: str) -> Page | None:
    """The governed tab: the page whose URL is exactly `url` (its identity)."""
    for context in browser.contexts:
        for page in context.pages:
            if page.url == url:
                return page
    return None


async def wait_ready(page: Page, ready: str | None, timeout_s: float) -> bool:
    """Wait until the JS expression `ready` is truthy on the page (no expression: true)."""
    if not ready:
        return True
    try:
        await page.wait_for_function(ready, timeout=timeout_s * 1000)
    except PlaywrightError:
        return False
    return True


async def open_tab(browser: Browser, url: str) -> Page:
    """Open a new governed tab on `url` with the console capture installed."""
    context = browser.contexts[0] if browser.contexts else await browser.new_context()
    page = await context.new_page()
    await page.add_init_script(INIT_SCRIPT)
    await page.goto(url, wait_until="load")
    return page


async def snapshot(page: Page) -> Snapshot:
    """URL, title, DOM digest and a PNG screenshot of the tab as it is now."""
    html = await page.content()
    png = await page.screenshot(type="png")
    return Snapshot(page.url, await page.title(), digest(html.encode("utf-8")), png)


async def read(page: Page, ids: Sequence[str]) -> JSONObject:
    """The known reads `ids` (see `READS`) of the tab; `screenshot` is taken separately."""
    out: JSONObject = {}
    for name in ids:
        value: JSONValue
        if name == "url":
            value = page.url
        elif name == "title":
            value = await page.title()
        elif name == "dom_text":
            value = str(await page.evaluate("document.body ? document.body.innerText : ''"))
        elif name == "console_errors":
            raw = await page.evaluate("window.__comalConsole || []")
            value = [str(x) for x in raw] if isinstance(raw, list) else []
        elif name == "failed_requests":
            raw = await page.evaluate(
                "performance.getEntriesByType('resource')"
                ".filter(e => e.responseStatus === 0 || e.responseStatus >= 400)"
                ".map(e => ({url: e.name, status: e.responseStatus}))"
            )
            value = json.loads(json.dumps(raw)) if isinstance(raw, list) else []
        else:
            continue
        out[name] = value
    return out


async def close_browser(port: int) -> bool:
    """Close the browser on CDP `port` (the whole process). False when none answered."""
    if not cdp_alive(port):
        return False
    async with connected(port) as browser:
        session = await browser.new_browser_cdp_session()
        # The browser closing its own connection is the expected end.
        with contextlib.suppress(PlaywrightError):
            await session.send("Browser.close")
    await asyncio.sleep(0)
    return True
