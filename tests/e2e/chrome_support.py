"""Helpers for the governed Chrome task tests: a site folder, the plugin's processes, counts."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import urllib.request
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from comal.config import Config, PluginsConfig
from comal.ledger.entry import Entry
from comal.messages import JSONObject
from comal.testing.loopback import LoopbackService

SITE_HTML = """<!doctype html>
<html><head><title>Comal site</title></head>
<body><h1 id="greeting">Hello from the site</h1>
<script>console.error("site says: first error");</script>
<img src="missing.png">
</body></html>
"""


def make_site(workspace: Path, html: str = SITE_HTML) -> Path:
    """A `site/` folder with an index page and a stylesheet."""
    site = workspace / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "index.html").write_text(html, encoding="utf-8")
    (site / "style.css").write_text("h1 { color: teal; }\n", encoding="utf-8")
    return site


def chrome_config(tmp_path: Path, workspace: Path, **settings: object) -> Config:
    """A configuration with the Chrome plugin enabled."""
    chrome: JSONObject = json.loads(json.dumps(settings))
    return Config(
        home=tmp_path / "home",
        config_dir=tmp_path / "config",
        workspace=workspace,
        env=dict(os.environ),
        plugins=PluginsConfig(("chrome",), {"chrome": chrome}),
    )


def state_roots(home: Path) -> list[Path]:
    """The Chrome plugin's task directories under a Comal home."""
    base = home / "plugins" / "chrome"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def deploys(home: Path) -> list[Mapping[str, object]]:
    """Every server start the plugin's deploy logs recorded."""
    out: list[Mapping[str, object]] = []
    for root in state_roots(home):
        log = root / "deploys.jsonl"
        if log.exists():
            out += [json.loads(line) for line in log.read_text().splitlines() if line]
    return out


def live_pids(home: Path) -> list[int]:
    """Pids of the plugin's servers and browsers that are still running."""
    pids = []
    for root in state_roots(home):
        for pid_file in root.glob("*.pid"):
            pid = int(pid_file.read_text())
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            pids.append(pid)
    return pids


def stop_all(home: Path) -> None:
    """Kill whatever the plugin left running (test cleanup)."""
    for pid in live_pids(home):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def by_call(entries: Sequence[Entry], kind: str) -> dict[str, Any]:
    """Payloads of the entries of `kind`, by call id (as plain JSON, for assertions)."""
    return {
        str(e.payload["call_id"]): json.loads(json.dumps(e.payload))
        for e in entries
        if e.kind == kind
    }


class Gate(LoopbackService):
    """A loopback switch the test page polls (CORS open): `state` is what it answers.

    The page waits for `open` before it is ready, and while the gate says `hold` its main
    thread is blocked in synchronous requests, so any read of the page waits too: that is how
    a test holds a ChromePublish or a ChromeRecover in flight to kill the process.
    """

    def __init__(self) -> None:
        self.state = "closed"
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = gate.state.encode()
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return None

        super().__init__(Handler)
        self.start()


def gated_html(gate_port: int) -> str:
    """A page that becomes ready (`window.__ready`) once the gate opens, and blocks on hold."""
    url = f"http://127.0.0.1:{gate_port}/state"
    return f"""<!doctype html>
<html><head><title>Gated site</title></head>
<body><h1>Hello from the gated site</h1>
<script>
function ask() {{
  const x = new XMLHttpRequest(); x.open('GET', '{url}', false);
  try {{ x.send(); return x.responseText; }} catch (e) {{ return 'closed'; }}
}}
setInterval(() => {{
  let state = ask();
  if (state !== 'closed') window.__ready = true;
  while (state === 'hold') state = ask();
}}, 100);
</script>
</body></html>
"""


def cdp_tabs(port: int) -> list[str]:
    """URLs of the pages of the browser on CDP `port` (empty when none answers)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
            return [t["url"] for t in json.loads(r.read()) if t.get("type") == "page"]
    except OSError:
        return []
