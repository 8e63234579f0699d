"""The harness both crash benchmarks share: processes, kills and the ledger they read.

- `FakeServerProcess`: `python -m comal.testing.fake_server` as its own process, so it outlives
  every killed client (and counts orphan calls and results on every request it receives);
- `make_workspace`, `comal_env`, `start_comal`: a workspace configured for that server, with its
  own COMAL_HOME, and Comal started in it as a real subprocess;
- `KillPlan` and `run_once`: one run of Comal, SIGKILLed after a delay or shortly after an
  awaited ledger entry appears (`kill_on_entry` polls for it), its output kept in files so a
  full pipe never stalls it;
- `session_entries`, `wait_for_entries`, `stream_events`: what a (possibly killed) run left in
  the ledger (or waiting until it holds something) and on stdout; `ServedWorkspace` holds
  the three for a test;
- `figures` and `bench_main`: the Markdown table and the command line of a benchmark.

No test hook exists in Comal: kills land by timing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from comal.ledger import Entry, Ledger

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
COMAL = (PYTHON, "-m", "comal")
"""The command that runs Comal."""


class FakeServerProcess:
    """`python -m comal.testing.fake_server` as its own process.

    Args:
        directory: where the script and port file go.
        turns: the scripted turns.
        options: extra script options (`turn_by`, `window`, …).
    """

    def __init__(self, directory: Path, turns: Sequence[object], **options: object) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        script = directory / "script.json"
        script.write_text(json.dumps({"turns": list(turns), **options}), encoding="utf-8")
        self.port_file = directory / "port"
        self.proc = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "comal.testing.fake_server",
                "--script",
                str(script),
                "--port-file",
                str(self.port_file),
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                self.stop()
                raise RuntimeError(f"fake server did not start: {err}")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text())

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, object]:
        """`GET /_fake/stats`."""
        url = f"http://127.0.0.1:{self.port}/_fake/stats"
        with urllib.request.urlopen(url, timeout=10) as response:
            data: dict[str, object] = json.loads(response.read())
        return data

    def stop(self) -> None:
        """SIGTERM, then wait."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


def make_workspace(root: Path, base_url: str, checks: Sequence[str] = ()) -> tuple[Path, Path]:
    """A workspace configured for the fake provider, and its own COMAL_HOME."""
    workspace = root / "ws"
    (workspace / ".comal").mkdir(parents=True)
    home = root / "home"
    home.mkdir()
    lines = [
        'default_provider = "fake"',
        f"checks = {json.dumps(list(checks))}",
        "[providers.fake]",
        'wire = "openai-chat"',
        f'base_url = "{base_url}"',
        'model = "fake-model"',
        "max_retries = 1",
    ]
    (workspace / ".comal" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return workspace.resolve(), home


def comal_env(home: Path) -> dict[str, str]:
    """The environment a Comal subprocess runs with."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["COMAL_HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / "xdg-config")
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def start_comal(workspace: Path, home: Path, *args: str) -> subprocess.Popen[bytes]:
    """Start `python -m comal ARGS` in the workspace (stdin empty, stream-json on stdout)."""
    return subprocess.Popen(
        [*COMAL, *args, "--output-format", "stream-json"],
        cwd=workspace,
        env=comal_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def ledger_of(home: Path) -> str | Path:
    """The ledger the Comal processes of `home` write: `COMAL_LEDGER_URL` (a PostgreSQL server
    shared by every trial) when set, else the file under `home`."""
    return os.environ.get("COMAL_LEDGER_URL") or home / "ledger.db"


def session_entries(home: Path, workspace: Path) -> tuple[str | None, list[Entry]]:
    """The latest session of the workspace and its entries (empty when none exists yet)."""
    path = ledger_of(home)
    if isinstance(path, Path) and not path.exists():
        return None, []
    with Ledger.open(path) as ledger:
        sid = ledger.latest_session(str(workspace))
        return sid, ([] if sid is None else ledger.entries(sid))


def wait_for_entries(
    proc: subprocess.Popen[bytes],
    home: Path,
    workspace: Path,
    test: Callable[[list[Entry]], bool],
    timeout_s: float,
) -> None:
    """Poll the workspace's latest session until `test(entries)` holds, while `proc` runs.

    Raises:
        AssertionError: `proc` ended first (with its output), or `timeout_s` passed.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(proc.communicate())
        _, entries = session_entries(home, workspace)
        if entries and test(entries):
            return
        time.sleep(0.05)
    raise AssertionError(f"the awaited entries never appeared within {timeout_s:g} s")


@dataclass
class ServedWorkspace:
    """A workspace configured for a fake server process, where Comal processes are started."""

    server: FakeServerProcess
    workspace: Path
    home: Path
    flags: tuple[str, ...] = ()
    """Put before every start's own arguments (`--plugin chrome`, …)."""
    wait_s: float = 30.0
    """How long `wait_for` waits."""

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        """Start `python -m comal FLAGS ARGS` (see `start_comal`)."""
        return start_comal(self.workspace, self.home, *self.flags, *args)

    def session(self) -> tuple[str, list[Entry]]:
        """The workspace's latest session and its entries.

        Raises:
            AssertionError: no session was recorded.
        """
        sid, entries = session_entries(self.home, self.workspace)
        if sid is None:
            raise AssertionError("no session was recorded")
        return sid, entries

    def wait_for(self, proc: subprocess.Popen[bytes], test: Callable[[list[Entry]], bool]) -> None:
        """Wait until the session's entries pass `test` (see `wait_for_entries`)."""
        wait_for_entries(proc, self.home, self.workspace, test, self.wait_s)


def stream_events(stdout: bytes) -> list[dict[str, object]]:
    """Complete stream-json events of a (possibly killed) run."""
    events = []
    for line in stdout.decode("utf-8", "replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line cut by the kill
        if isinstance(value, dict):
            events.append(value)
    return events


# --- kills ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KillPlan:
    """When to SIGKILL a run: `delay_s` after the start, or after a matching entry appears.

    `kind` (and `call_id`) name the awaited entry; `children_only` waits for it in a child
    session, never in the top one.
    """

    name: str
    delay_s: float
    kind: str | None = None
    call_id: str | None = None
    children_only: bool = False

    def matches(self, entry: Entry, top_id: str | None = None) -> bool:
        """Whether `entry` is the one this plan waits for (`top_id`: the top session)."""
        if entry.kind != self.kind or (self.children_only and entry.session_id == top_id):
            return False
        return self.call_id is None or entry.payload.get("call_id") == self.call_id


Watch = Callable[[subprocess.Popen[bytes], KillPlan, float], None]
"""Wait for a plan's entry until the deadline (`time.monotonic()`), then kill (`kill_on_entry`)."""


def kill_on_entry(
    proc: subprocess.Popen[bytes],
    path: str | Path,
    plan: KillPlan,
    deadline: float,
    *,
    ready: Callable[[], bool],
    awaited: Callable[[Ledger], bool],
    poll_s: float,
) -> None:
    """Poll the ledger at `path` until `awaited` sees the plan's entry, then wait and SIGKILL.

    Args:
        ready: whether the ledger may be opened yet (polled every 10 ms until it is).
        awaited: whether the entries new since its last call hold the awaited one.
        poll_s: the pause between two looks at the ledger (on PostgreSQL: the longest; it
            looks again as soon as an append is notified).
    """
    ledger: Ledger | None = None
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if ledger is None:
                if not ready():
                    time.sleep(0.01)
                    continue
                ledger = Ledger.open(path)
            if awaited(ledger):
                time.sleep(plan.delay_s)
                proc.send_signal(signal.SIGKILL)
                return
            if ledger.engine == "postgresql":
                # A server tells of each append (NOTIFY): looking again only then spares it
                # (and the shared cores) two queries per millisecond.
                ledger.wait_for_change(max(poll_s, 0.05))
            else:
                time.sleep(poll_s)
    finally:
        if ledger is not None:
            ledger.close()


def run_once(
    workspace: Path,
    home: Path,
    args: Sequence[str],
    plan: KillPlan | None,
    timeout: float,
    watch: Watch,
) -> tuple[int | None, bytes, bytes]:
    """Run Comal once (output to files, so a full pipe never stalls it), maybe killing it.

    Returns:
        The exit code (None when it outlived `timeout`), stdout and stderr.
    """
    out_path, err_path = workspace.parent / "stdout", workspace.parent / "stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            [*COMAL, *args, "--output-format", "stream-json"],
            cwd=workspace,
            env=comal_env(home),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
        deadline = time.monotonic() + timeout
        try:
            if plan is not None and plan.kind is None:
                try:
                    proc.wait(timeout=plan.delay_s)
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGKILL)
            elif plan is not None:
                watch(proc, plan, deadline)
            code: int | None = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            code = None
        finally:
            # Never leave the client running, whatever the watcher raised.
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return code, out_path.read_bytes(), err_path.read_bytes()


# --- figures --------------------------------------------------------------------------------


def figures(rows: Sequence[tuple[str, str]], *tallies: tuple[str, Counter[str]]) -> str:
    """A benchmark's measures as a Markdown table, then one table per tally (most first)."""
    lines = ["| measure | value |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows]
    for title, tally in tallies:
        lines += ["", f"| {title} | kills |", "|---|---|"]
        lines += [f"| {key} | {n} |" for key, n in tally.most_common()]
    return "\n".join(lines)


class Report(Protocol):
    """What a benchmark's run returns: its table and the trials that failed."""

    failures: list[str]

    def table(self) -> str:
        """The figures as a Markdown table."""
        ...


ReportT = TypeVar("ReportT", bound=Report)


def bench_main(
    argv: Sequence[str] | None,
    prog: str,
    trials: int,
    run: Callable[[int, int, Path | None], ReportT],
    met: Callable[[ReportT], bool],
) -> int:
    """Parse `--trials --seed --dir`, run, print the table (failures to stderr); 1 when missed."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--trials", type=int, default=trials)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary trees go")
    args = parser.parse_args(argv)
    summary = run(args.trials, args.seed, args.dir)
    print(summary.table())
    for failure in summary.failures:
        print(failure, file=sys.stderr)
    return 0 if met(summary) else 1
