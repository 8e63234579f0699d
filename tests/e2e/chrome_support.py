"""Helpers for the governed Chrome task tests: a site folder, the plugin's processes, counts."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from comal.config import Config, PluginsConfig
from comal.ledger.entry import Entry
from comal.messages import JSONObject

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
