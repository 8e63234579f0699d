"""The ledger's two engines side by side, in the same run: SQLite (a file) and PostgreSQL.

Run: `.venv/bin/python -m perf.engines_bench [--pg URL] [--appends N] [--dir DIR]`
(`--pg` defaults to `COMAL_TEST_PG_URL`; `scripts/pg-cluster.sh start DIR` starts a throwaway
server on loopback). Each engine gets a fresh ledger (a file; a schema of its own).

Measured, durable (SQLite `synchronous=FULL`, PostgreSQL `fsync` and synchronous commit on):
- append of a ~300-byte message entry, one commit each: p50, p99 and appends/s, with 1 writer
  and with 8 writer processes on 8 sessions (all started together, each timing its own),
  appending as fast as they can (on 2 cores, 8 Python processes at full speed saturate the CPU:
  the figure is a queue, not the engine's added latency);
- the same 8 writers at an agent's pace: each appends a turn's burst of `BURST` entries (the
  model's message, a tool's start and its result), then waits `PAUSE_S` (the model thinking,
  the tool running; seeded random within the range), as a fleet of agents does;
- resume of a 10,000-entry session: open the ledger in a fresh object and read the session
  (5 times: the median and the fastest);
- EvidenceRead of a 50 MB output: the page at its middle, first read after open, and 50 pages
  at random offsets (p50/p99).
Figures go to stdout as a Markdown table.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from comal.evidence.read import read_evidence
from comal.ledger import Ledger
from comal.messages import JSONObject, message_to_json, user_text
from comal.session import paged
from comal.testing.sessions import SessionBuilder

RESUME_ENTRIES = 10_000
RESUMES = 5
OUTPUT_BYTES = 50 * 1024 * 1024
WRITERS = 8
BURST = 3
PAUSE_S = (0.05, 0.25)


def _payload(i: int) -> JSONObject:
    text = f"step {i}: please look at src/module_{i % 97}.py and run the tests again " * 3
    return {"message": message_to_json(user_text(text))}


def _cuts(latencies: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(latencies, n=100)
    return cuts[49] * 1000, cuts[98] * 1000


def _writer(target: str, count: int, start_at: float, paced: int) -> tuple[list[float], float]:
    """One writer process: its own session, `count` timed appends (in bursts of `BURST` with
    a pause after each when `paced`, a seed); the latencies and the seconds it took."""
    rng = random.Random(paced)
    with Ledger.open(target) as ledger:
        sid = ledger.create_session(cwd="/bench")
        while time.time() < start_at:
            time.sleep(0.001)
        began = time.perf_counter()
        latencies = []
        for i in range(count):
            t0 = time.perf_counter()
            ledger.append(sid, "message.user", _payload(i))
            latencies.append(time.perf_counter() - t0)
            if paced and i % BURST == BURST - 1:
                time.sleep(rng.uniform(*PAUSE_S))
        return latencies, time.perf_counter() - began


def bench_appends(target: str, count: int, writers: int, *, paced: bool = False) -> dict[str, str]:
    """p50, p99 and throughput of durable appends by `writers` processes."""
    Ledger.open(target).close()  # created and migrated before the writers start
    context = multiprocessing.get_context("spawn")
    start_at = time.time() + 2.0
    args = [(target, count, start_at, (n + 1) if paced else 0) for n in range(writers)]
    with context.Pool(writers) as pool:
        results = pool.starmap(_writer, args)
    latencies = [x for r, _ in results for x in r]
    p50, p99 = _cuts(latencies)
    wall = max(took for _, took in results)
    who = f"{writers} writer(s)" + (", agent pace" if paced else "")
    return {
        f"append p50, {who}": f"{p50:.2f} ms",
        f"append p99, {who}": f"{p99:.2f} ms",
        f"append max, {who}": f"{max(latencies) * 1000:.2f} ms",
        f"appends/s, {who}": f"{len(latencies) / wall:,.0f}",
    }


def bench_resume(target: str) -> dict[str, str]:
    """Open a ledger in a fresh object and read a 10,000-entry session."""
    with Ledger.open(target, durable=False) as ledger:
        sid = ledger.create_session(cwd="/bench")
        for i in range(RESUME_ENTRIES):
            body = os.urandom(512) if i % 10 == 0 else None
            ledger.append(sid, "message.user", _payload(i), body=body)
    times = []
    for _ in range(RESUMES):
        t0 = time.perf_counter()
        with Ledger.open(target) as ledger:
            entries = ledger.entries(sid)
        times.append((time.perf_counter() - t0) * 1000)
        assert len(entries) == RESUME_ENTRIES
    return {
        f"resume: open + read 10,000 entries, median of {RESUMES} (fastest)": (
            f"{statistics.median(times):.0f} ms ({min(times):.0f} ms)"
        )
    }


def _ms(run: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    run()
    return (time.perf_counter() - t0) * 1000


def bench_page(target: str) -> dict[str, str]:
    """EvidenceRead pages of a 50 MB output."""
    line = "2026-01-01 12:00:00 worker processed batch ✓ éü 😀 id=%06d\n"
    body = "".join(line % i for i in range(OUTPUT_BYTES // 58)).encode()
    with Ledger.open(target) as ledger:
        builder = SessionBuilder(ledger)
        builder.user("dump")
        t0 = time.perf_counter()
        (result,) = builder.turn("", [("Bash", {"command": "cat huge.log"}, body, 0)])
        stored = time.perf_counter() - t0
        sid, ref = builder.session_id, result.id
    paged._MEMO.clear()
    with Ledger.open(target) as ledger:
        total = read_evidence(ledger, sid, ref, limit=1).total_units
        paged._MEMO.clear()
        middle = _ms(lambda: read_evidence(ledger, sid, ref, offset=total // 2))
        rng = random.Random(1)
        times = [
            _ms(lambda: read_evidence(ledger, sid, ref, offset=rng.randrange(total)))
            for _ in range(50)
        ]
    p50, p99 = statistics.median(times), sorted(times)[int(len(times) * 0.99) - 1]
    return {
        "store 50 MB output (hash, blob, page index)": f"{stored * 1000:.0f} ms",
        "EvidenceRead page at the middle of 50 MB, first after open": f"{middle:.1f} ms",
        "EvidenceRead 50 random pages of 50 MB": f"p50 {p50:.1f} ms · p99 {p99:.1f} ms",
    }


@contextmanager
def _pg_schema(url: str) -> Iterator[str]:
    schema = "bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        joiner = "&" if "?" in url else "?"
        yield f"{url}{joiner}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def _target(engine: str, root: Path, name: str, pg: str) -> Iterator[str]:
    if engine == "sqlite":
        yield str(root / f"{name}.db")
        return
    with _pg_schema(pg) as url:
        yield url


def run(root: Path, pg: str, appends: int, only: str) -> dict[str, dict[str, str]]:
    """Every figure for both engines (of the steps whose name starts with `only`)."""
    figures: dict[str, dict[str, str]] = {"sqlite": {}, "postgresql": {}}
    steps: list[tuple[str, Callable[[str], dict[str, str]]]] = [
        ("append-one", lambda t: bench_appends(t, appends, 1)),
        ("append-eight", lambda t: bench_appends(t, appends // 4, WRITERS)),
        ("append-paced", lambda t: bench_appends(t, appends // 4, WRITERS, paced=True)),
        ("resume", bench_resume),
        ("page", bench_page),
    ]
    for name, step in steps:
        if not name.startswith(only):
            continue
        for engine in figures:  # the engines alternate, step by step, in the same run
            with _target(engine, root, name, pg) as target:
                figures[engine].update(step(target))
    return figures


def main() -> None:
    """Run both engines and print one Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pg", default=os.environ.get("COMAL_TEST_PG_URL", ""))
    parser.add_argument("--appends", type=int, default=1000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--only", default="", help="steps whose name starts so (append, resume…)")
    args = parser.parse_args()
    if not args.pg:
        parser.error("give --pg URL or set COMAL_TEST_PG_URL")
    with psycopg.connect(args.pg) as admin:
        settings = ", ".join(
            f"{name}={admin.execute(f'SHOW {name}').fetchone()[0]}"  # type: ignore[index]
            for name in ("server_version", "fsync", "synchronous_commit", "wal_sync_method")
        )
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        figures = run(Path(tmp), args.pg, args.appends, args.only)
    print(
        f"ledger engines · {platform.platform()} · {os.cpu_count()} cpus · load average"
        f" {load:.1f} → {os.getloadavg()[0]:.1f} · PostgreSQL on loopback ({settings})"
    )
    print("| measure | SQLite | PostgreSQL |\n|---|---|---|")
    for measure, value in figures["sqlite"].items():
        print(f"| {measure} | {value} | {figures['postgresql'][measure]} |")


if __name__ == "__main__":
    main()
