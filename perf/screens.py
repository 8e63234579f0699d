"""Regenerate the screens shown in the docs: the TUI's working line and an HTML export.

Run: `.venv/bin/python -m perf.screens [--out docs/screens] [--session FILE]`.

- `working-line.txt`: `tmux capture-pane -p` of the TUI while a 30-second Bash command runs
  (spinner, elapsed time, tokens, "esc to interrupt", the running command and its output's
  tail), against the loopback fake server (`comal.testing.fake_server`). Needs tmux.
- `export.png`: `comal export --html` of a session rendered by Debian's chromium through
  Playwright, the page's first 1,400 pixels. By default the session is Comal's own, made here
  against the fake server in a throwaway `demo-project` (so no recorded person's paths show);
  `--session FILE` exports a recorded Claude Code session imported with `comal import`.

Everything runs in a temporary `COMAL_HOME`; nothing is read from or written to the user's.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from comal.testing.fake_server import FakeServer

ROOT = Path(__file__).resolve().parents[1]
COMMAND = 'for i in $(seq 1 30); do echo "compiling module $i of 30"; sleep 1; done'


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMAL_", "OPENAI_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env |= {"COMAL_HOME": str(home), "XDG_CONFIG_HOME": str(home / "xdg-config")}
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def _tmux(socket: str, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=True, timeout=20
    )
    return done.stdout


def working_line(out: Path, after_s: float = 12.0) -> str:
    """The TUI's screen `after_s` seconds into a 30-second Bash command, saved to `out`."""
    turns: list[str | dict[str, Any]] = [
        {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": {"command": COMMAND}}]},
        "Built: all 30 modules compiled.",
    ]
    socket = f"comal-screens-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp, FakeServer(turns) as server:
        root = Path(tmp)
        workspace, home = root / "project", root / "home"
        (workspace / ".comal").mkdir(parents=True)
        (workspace / ".comal" / "config.toml").write_text(
            'default_provider = "fake"\n\n[providers.fake]\nwire = "openai-chat"\n'
            f'base_url = "{server.openai_base_url}"\nmodel = "fake-model"\n'
            "context_window = 32768\n"
        )
        env = _env(home) | {"TERM": "xterm-256color", "HOME": str(root)}
        command = " ".join(
            [
                "env",
                *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                shlex.quote(sys.executable),
                "-m",
                "comal",
                "--permission-mode",
                "bypassPermissions",
                shlex.quote("build the project"),
            ]
        )
        _tmux(socket, "new-session", "-d", "-s", "comal", "-x", "110", "-y", "30")
        try:
            _tmux(socket, "respawn-pane", "-k", "-t", "comal", "-c", str(workspace), command)
            deadline = time.monotonic() + 60
            screen = ""
            while time.monotonic() < deadline and "esc to interrupt" not in screen:
                time.sleep(0.2)
                screen = _tmux(socket, "capture-pane", "-p", "-t", "comal")
            if "esc to interrupt" not in screen:
                raise SystemExit(f"the working line never showed:\n{screen}")
            time.sleep(after_s)
            screen = _tmux(socket, "capture-pane", "-p", "-t", "comal")
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(screen.rstrip("\n") + "\n", encoding="utf-8")
    return screen


def _comal(home: Path, cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "comal", *args],
        cwd=cwd,
        env=_env(home),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"comal {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


CHECK = "python3 -c 'from src.slug import slug; print(slug(\"a  b\"))'"
DEMO_TURNS: list[str | dict[str, Any]] = [
    {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": {"command": "ls -la src"}}]},
    {"tool_calls": [{"id": "c2", "name": "Read", "arguments": {"path": "src/slug.py"}}]},
    {
        "tool_calls": [
            {
                "id": "c3",
                "name": "Edit",
                "arguments": {
                    "path": "src/slug.py",
                    "edits": [
                        {
                            "old_string": 'return text.lower().replace(" ", "-")',
                            "new_string": 'return "-".join(text.lower().split())',
                        }
                    ],
                },
            }
        ]
    },
    {"tool_calls": [{"id": "c4", "name": "Bash", "arguments": {"command": CHECK}}]},
    "## Fixed\n\n`slug()` now collapses **every run of whitespace** into one dash:\n\n"
    '```python\ndef slug(text: str) -> str:\n    return "-".join(text.lower().split())\n```'
    '\n\n- `slug("a  b")` now gives `a-b`\n- no other caller changes',
]
DEMO_FILES = {
    "src/slug.py": 'def slug(text: str) -> str:\n    return text.lower().replace(" ", "-")\n',
    "src/__init__.py": "",
}


def _demo_session(root: Path, home: Path) -> str:
    """A session of Comal's own in `root/demo-project`, against the fake server; its id."""
    workspace = root / "demo-project"
    for name, text in DEMO_FILES.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    with FakeServer(DEMO_TURNS) as server:
        (workspace / ".comal").mkdir()
        (workspace / ".comal" / "config.toml").write_text(
            'default_provider = "fake"\n\n[providers.fake]\nwire = "openai-chat"\n'
            f'base_url = "{server.openai_base_url}"\nmodel = "fake-model"\n'
            "context_window = 32768\n"
        )
        task = "slug() leaves double dashes for double spaces; fix it and run the tests"
        _comal(home, workspace, "--permission-mode", "bypassPermissions", "-p", task)
    listed = json.loads(_comal(home, root, "sessions", "--all", "--json"))
    return str(listed[0]["id"])


def export_png(out: Path, session: Path | None, height: int = 1400) -> None:
    """`comal export --html` of a session as a PNG in chromium: `session`, a recorded Claude
    Code file, imported; without one, a session of Comal's own made against the fake server."""
    from playwright.sync_api import sync_playwright

    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser_path is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        if session is None:
            session_id = _demo_session(root, home)
        else:
            _comal(home, root, "import", str(session))
            session_id = json.loads(_comal(home, root, "sessions", "--all", "--json"))[0]["id"]
        page_file = root / "export.html"
        _comal(home, root, "export", session_id, "--format", "html", "-o", str(page_file))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": height})
            page.goto(page_file.resolve().as_uri())
            page.wait_for_load_state("networkidle")
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), clip={"x": 0, "y": 0, "width": 1280, "height": height})
            browser.close()


def main() -> None:
    """Write both screens."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screens")
    parser.add_argument("--session", type=Path, default=None)
    parser.add_argument("--only", choices=("working-line", "export"), default=None)
    opts = parser.parse_args()
    if opts.only in (None, "working-line"):
        print(working_line(opts.out / "working-line.txt"))
    if opts.only in (None, "export"):
        export_png(opts.out / "export.png", opts.session)
        made = opts.session.name if opts.session else "a demo session against the fake server"
        print(f"wrote {opts.out / 'export.png'} from {made}")


if __name__ == "__main__":
    main()
