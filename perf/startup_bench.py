"""Start-up benchmarks: what a user waits for before Comal does anything.

Run: `.venv/bin/python -m perf.startup_bench [--runs N] [--sessions N]`.

Each figure is the median of `--runs` fresh `python -m comal` processes, as CPU (user + system
of the child, from `RUSAGE_CHILDREN`) and wall time:
- `comal --help` and `comal --version`;
- `comal sessions --all` over a ledger of `--sessions` sessions (built once with
  `SessionBuilder`, in a temporary `COMAL_HOME`);
- `comal -p` until the loopback fake server (`comal.testing.fake_server`) receives its first
  model request (wall, and the child's CPU until then, read from /proc), and the whole run's CPU.

Then `python -X importtime -m comal --help` and `… -p`: the ten imports with the largest
cumulative time.
Each command runs once first, unmeasured, so that Python's bytecode cache is written (the
children run without `PYTHONDONTWRITEBYTECODE`, as a user's Python does); `PYTHONPATH` is passed
through, so `PYTHONPATH=/elsewhere/src` measures another checkout's code.
Load on the machine is printed beside the figures: on a shared machine they vary.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from comal.ledger.store import Ledger
from comal.testing.fake_server import FakeServer
from comal.testing.sessions import SessionBuilder

COMAL = (sys.executable, "-m", "comal")


@dataclass(frozen=True, slots=True)
class Sample:
    """One process: its CPU and wall time, in seconds."""

    cpu: float
    wall: float
    ok: bool = True
    cpu_to_first: float = float("nan")
    """`-p` only: the CPU it had used when the server received its first request."""


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env = {k: v for k, v in env.items() if not k.startswith("COMAL_")}
    # A user's Python caches compiled modules; without the cache every run compiles them all
    # again (about 0.3 s of CPU for `-p`), which measures the compiler, not Comal.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["COMAL_HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / "xdg-config")
    return env


def run_once(args: Sequence[str], cwd: Path, home: Path) -> Sample:
    """One `python -m comal ARGS`, output discarded."""
    cpu0, t0 = _child_cpu(), time.perf_counter()
    done = subprocess.run(
        [*COMAL, *args],
        cwd=cwd,
        env=_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return Sample(_child_cpu() - cpu0, time.perf_counter() - t0, done.returncode == 0)


def first_request(cwd: Path, home: Path, server: FakeServer) -> Sample:
    """`comal -p` against the fake server: wall until its first request, CPU of the whole run."""
    seen = len(server.received)
    server.add_turns("done")
    cpu0, t0 = _child_cpu(), time.perf_counter()
    proc = subprocess.Popen(
        [*COMAL, "-p", "say done"],
        cwd=cwd,
        env=_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = cpu_first = float("nan")
    while len(server.received) == seen and proc.poll() is None:
        time.sleep(0.002)
    if len(server.received) > seen:
        wall = time.perf_counter() - t0
        cpu_first = _cpu_of(proc.pid)
    proc.wait()
    return Sample(_child_cpu() - cpu0, wall, cpu_to_first=cpu_first)


def _cpu_of(pid: int) -> float:
    """CPU (user + system) process `pid` has used so far, from /proc (NaN where unreadable)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def build_sessions(home: Path, count: int, cwd: Path) -> None:
    """`count` short answered sessions, half of them in `cwd`."""
    home.mkdir(parents=True, exist_ok=True)
    with Ledger.open(home / "ledger.db") as ledger:
        for i in range(count):
            sb = SessionBuilder(ledger, cwd=str(cwd) if i % 2 else "/elsewhere")
            sb.user(f"task number {i}: fix the failing test in module_{i % 37}.py")
            sb.turn("Running the tests.", [("Bash", {"command": "pytest -q"}, b"1 failed", 1)])
            sb.answer("Fixed.")


def configure(workspace: Path, server: FakeServer) -> None:
    """Point the workspace at the fake server (openai-chat)."""
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text(
        'default_provider = "fake"\n\n[providers.fake]\nwire = "openai-chat"\n'
        f'base_url = "{server.openai_base_url}"\nmodel = "fake-model"\ncontext_window = 32768\n'
    )


def importtime(cwd: Path, home: Path, args: Sequence[str]) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the ten slowest imports of `python -X importtime -m comal`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "comal", *args],
        cwd=cwd,
        env=_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    rows: list[tuple[int, str]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|", 2)
        rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:10]


def _median(samples: list[Sample]) -> Sample:
    return Sample(
        statistics.median(s.cpu for s in samples),
        statistics.median(s.wall for s in samples),
        all(s.ok for s in samples),
        statistics.median(s.cpu_to_first for s in samples),
    )


def main() -> None:
    """Run the benchmarks and print Markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=1000)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeServer() as server:
        root = Path(tmp)
        home, workspace = root / "home", root / "work"
        workspace.mkdir()
        configure(workspace, server)
        build_sessions(home, opts.sessions, workspace)
        figures: list[tuple[str, Sample]] = []
        for label, args in (
            ("comal --help", ["--help"]),
            ("comal --version", ["--version"]),
            (f"comal sessions --all ({opts.sessions} sessions)", ["sessions", "--all"]),
            (f"comal sessions ({opts.sessions} sessions)", ["sessions"]),
        ):
            run_once(args, workspace, home)  # warm-up: writes the bytecode cache
            samples = [run_once(args, workspace, home) for _ in range(opts.runs)]
            figures.append((label, _median(samples)))
        first_request(workspace, home, server)
        runs = [first_request(workspace, home, server) for _ in range(opts.runs)]
        median = _median(runs)
        figures.append(("comal -p: first request (wall) / whole run (CPU)", median))
        first = Sample(median.cpu_to_first, median.wall, median.ok)
        figures.append(("comal -p: first request (CPU and wall until it)", first))
        top = importtime(workspace, home, ["--help"])
        server.add_turns("done")
        top_run = importtime(workspace, home, ["-p", "say done"])
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"start-up · {platform.platform()} · {os.cpu_count()} cpus · load {load}")
    print(f"median of {opts.runs} runs\n")
    print("| command | CPU | wall |\n|---|---:|---:|")
    for label, sample in figures:
        note = "" if sample.ok else " (failed)"
        print(f"| {label}{note} | {sample.cpu * 1000:.0f} ms | {sample.wall * 1000:.0f} ms |")
    print("\n`python -X importtime -m comal --help`, top 10 (cumulative)\n")
    print("| module | cumulative |\n|---|---:|")
    for micros, name in top:
        print(f"| `{name.strip()}` | {micros / 1000:.1f} ms |")
    print("\n`python -X importtime -m comal -p …`, top 10 (cumulative)\n")
    print("| module | cumulative |\n|---|---:|")
    for micros, name in top_run:
        print(f"| `{name.strip()}` | {micros / 1000:.1f} ms |")


if __name__ == "__main__":
    main()
