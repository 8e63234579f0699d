"""Ledger benchmarks: durable append latency, reading a 10,000-entry session, a 50 MB blob.

Run: `.venv/bin/python -m perf.ledger_bench [--dir DIR] [--appends N]`.
The ledger lives in a fresh temporary directory (default: under the system temp dir; pass
`--dir` to measure another filesystem). Figures go to stdout as a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from comal.ledger import Ledger
from comal.messages import JSONObject, message_to_json, user_text

READ_ENTRIES = 10_000
BLOB_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured figure."""

    name: str
    value: str


def _payload(i: int) -> JSONObject:
    text = f"step {i}: please look at src/module_{i % 97}.py and run the tests again " * 3
    return {"message": message_to_json(user_text(text))}


def bench_appends(directory: Path, count: int) -> list[Figure]:
    """Durable (synchronous=FULL) appends of a typical ~300-byte message entry, one per commit."""
    with Ledger.open(directory / "append.db") as ledger:
        sid = ledger.create_session(cwd="/bench")
        for i in range(20):
            ledger.append(sid, "message.user", _payload(i))
        latencies: list[float] = []
        start = time.perf_counter()
        for i in range(count):
            t0 = time.perf_counter()
            ledger.append(sid, "message.user", _payload(i))
            latencies.append(time.perf_counter() - t0)
        total = time.perf_counter() - start
    cuts = statistics.quantiles(latencies, n=100)
    return [
        Figure("durable append p50", f"{cuts[49] * 1000:.2f} ms"),
        Figure("durable append p99", f"{cuts[98] * 1000:.2f} ms"),
        Figure("durable appends/s (one commit each)", f"{count / total:,.0f}"),
    ]


def bench_read(directory: Path) -> list[Figure]:
    """Open a ledger holding a 10,000-entry session and read the whole session."""
    path = directory / "read.db"
    with Ledger.open(path, durable=False) as ledger:
        sid = ledger.create_session(cwd="/bench")
        for i in range(READ_ENTRIES):
            body = os.urandom(512) if i % 10 == 0 else None
            ledger.append(sid, "message.user", _payload(i), body=body)
    t0 = time.perf_counter()
    ledger = Ledger.open(path)
    t1 = time.perf_counter()
    entries = ledger.entries(sid)
    t2 = time.perf_counter()
    ledger.close()
    assert len(entries) == READ_ENTRIES
    return [
        Figure("open ledger (10,000-entry session)", f"{(t1 - t0) * 1000:.1f} ms"),
        Figure("read 10,000 entries", f"{(t2 - t1) * 1000:.1f} ms"),
        Figure("open + read", f"{(t2 - t0) * 1000:.1f} ms"),
    ]


def bench_blob(directory: Path) -> list[Figure]:
    """Store a 50 MB blob durably as an entry body and read it back."""
    data = os.urandom(BLOB_BYTES)
    with Ledger.open(directory / "blob.db") as ledger:
        sid = ledger.create_session(cwd="/bench")
        t0 = time.perf_counter()
        entry = ledger.append(sid, "tool.result", {"call_id": "c"}, body=data)
        t1 = time.perf_counter()
        back = ledger.body(entry)
        t2 = time.perf_counter()
    assert back == data
    mib = BLOB_BYTES / (1024 * 1024)
    return [
        Figure("store 50 MB blob (hash + durable commit)", f"{(t1 - t0) * 1000:.0f} ms"),
        Figure("read 50 MB blob back", f"{(t2 - t1) * 1000:.0f} ms"),
        Figure("store throughput", f"{mib / (t1 - t0):,.0f} MiB/s"),
    ]


def run(directory: Path, appends: int) -> list[Figure]:
    """Every ledger benchmark, in a fresh subdirectory of `directory`."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        root = Path(tmp)
        return bench_appends(root, appends) + bench_read(root) + bench_blob(root)


def main() -> None:
    """Run the benchmarks and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--appends", type=int, default=2000)
    args = parser.parse_args()
    figures = run(args.dir, args.appends)
    print(f"ledger benchmarks · {platform.platform()} · {os.cpu_count()} cpus · dir {args.dir}")
    print("| measure | value |\n|---|---|")
    for figure in figures:
        print(f"| {figure.name} | {figure.value} |")


if __name__ == "__main__":
    main()
