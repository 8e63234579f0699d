"""Regenerate docs/screens/fleet-follow.txt: two `comal -p` processes of two hosts on two sessions
of one PostgreSQL ledger, and `comal sessions --follow` showing both as they work.

Run: `scripts/pg-cluster.sh start DIR` (prints URL), then
`.venv/bin/python scripts/fleet_follow.py --pg URL [--out docs/screens/fleet-follow.txt]`.

The model is the loopback fake provider server of `comal.testing` (one per host, scripted: a
Bash call, then an Edit-free answer); the ledger is a fresh schema on the server, dropped after.
Every line of the three processes is kept, prefixed with the seconds since the follower started.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Any

import psycopg

from comal.testing.fake_server import FakeServer

COMAL = (sys.executable, "-m", "comal")
OUT = Path(__file__).parents[1] / "docs" / "screens" / "fleet-follow.txt"


def _turns(host: str) -> list[Any]:
    return [
        {
            "text": f"Looking at the {host} checkout first.",
            "tool_calls": [
                {"id": "c1", "name": "Bash", "arguments": {"command": "sleep 1; ls"}},
            ],
        },
        {
            "text": "Now the tests.",
            "tool_calls": [
                {"id": "c2", "name": "Bash", "arguments": {"command": "sleep 1; echo 3 passed"}},
            ],
        },
        f"All 3 tests pass on {host}.",
    ]


def _configure(workspace: Path, server: FakeServer) -> None:
    lines = [
        'default_provider = "fake"',
        "",
        "[providers.fake]",
        'wire = "openai-chat"',
        f'base_url = "{server.openai_base_url}"',
        'model = "fake-model"',
    ]
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text("\n".join(lines) + "\n")


def _env(home: Path, url: str, host: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COMAL_"))}
    env |= {"COMAL_HOME": str(home), "XDG_CONFIG_HOME": str(home / "xdg"), "COMAL_LEDGER_URL": url}
    if host is not None:
        env["COMAL_HOST_ID"] = host
    return env


class Transcript:
    """Lines of several processes, each stamped with the seconds since the start."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.lines: list[tuple[float, str, str]] = []
        self._mutex = threading.Lock()
        self._readers: list[threading.Thread] = []

    def add(self, who: str, text: str) -> None:
        with self._mutex:
            self.lines.append((time.monotonic() - self.started, who, text))

    def read(self, who: str, stream: IO[str]) -> None:
        def pump() -> None:
            for line in stream:
                self.add(who, line.rstrip("\n"))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        self._readers.append(reader)

    def wait_for(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(text in line for _, _, line in list(self.lines)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{text!r} never appeared")
            time.sleep(0.05)

    def join(self) -> None:
        for reader in self._readers:
            reader.join(timeout=10)

    def text(self, header: list[str]) -> str:
        body = [f"[{at:5.1f}s] {who:<9} {text}" for at, who, text in sorted(self.lines)]
        return "\n".join([*header, "", *body]) + "\n"


def _schema(url: str) -> tuple[str, str]:
    name = "fleet_" + uuid.uuid4().hex[:10]
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
    joiner = "&" if "?" in url else "?"
    return name, f"{url}{joiner}options=-csearch_path%3D{name}"


def record(url: str, root: Path) -> str:
    """Run the fleet and its follower; the transcript."""
    schema, ledger = _schema(url)
    shown = ledger.replace(schema, "fleet")
    log = Transcript()
    try:
        with FakeServer(_turns("host-a")) as one, FakeServer(_turns("host-b")) as two:
            spaces = []
            for host, server in (("host-a", one), ("host-b", two)):
                space = root / host / "project"
                space.mkdir(parents=True)
                _configure(space, server)
                spaces.append(space)
            watcher = subprocess.Popen(
                [*COMAL, "sessions", "--follow"],
                cwd=root,
                env=_env(root / "watcher", ledger, None),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert watcher.stdout is not None
            assert watcher.stderr is not None
            log.read("follow", watcher.stdout)
            log.read("follow", watcher.stderr)
            log.wait_for("following", 120)  # the follower is watching before the fleet starts
            agents = []
            for host, space in zip(("host-a", "host-b"), spaces, strict=True):
                log.add(host, "$ comal -p 'run the tests'")
                agent = subprocess.Popen(
                    [*COMAL, "-p", "run the tests"],
                    cwd=space,
                    env=_env(root / host, ledger, host),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                assert agent.stdout is not None
                log.read(host, agent.stdout)
                agents.append(agent)
                time.sleep(0.5)
            codes = [agent.wait(timeout=300) for agent in agents]
            for host, code in zip(("host-a", "host-b"), codes, strict=True):
                log.add(host, f"(exit {code})")
            time.sleep(2.0)
            watcher.send_signal(signal.SIGINT)
            watcher.wait(timeout=30)
            log.join()
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
    header = [
        "# Two hosts, two sessions, one PostgreSQL ledger; a third terminal follows the fleet.",
        f"# Regenerate: .venv/bin/python scripts/fleet_follow.py --pg URL  (ledger shown: {shown})",
        "#",
        f"# follow:  $ COMAL_LEDGER_URL={shown} comal sessions --follow",
        "# host-a:  $ COMAL_LEDGER_URL=… COMAL_HOST_ID=host-a comal -p 'run the tests'",
        "# host-b:  $ COMAL_LEDGER_URL=… COMAL_HOST_ID=host-b comal -p 'run the tests'",
        "# Each line: seconds since the follower started, the terminal, what it printed.",
    ]
    return log.text(header).replace(ledger, shown).replace(str(root), "/tmp/fleet")


def main() -> None:
    """Record the transcript and write it."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pg", default=os.environ.get("COMAL_TEST_PG_URL", ""))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if not args.pg:
        parser.error("give --pg URL or set COMAL_TEST_PG_URL")
    with tempfile.TemporaryDirectory(prefix="comal-fleet-") as tmp:
        text = record(args.pg, Path(tmp))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(json.dumps({"wrote": str(args.out), "lines": text.count("\n")}))


if __name__ == "__main__":
    main()
