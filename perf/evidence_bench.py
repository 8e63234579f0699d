"""EvidenceRead on a 50 MB output: pages anywhere, literal and regex searches, from a fresh open.

Run: `.venv/bin/python -m perf.evidence_bench [--mb 50] [--pages 200] [--dir DIR]`.

For each kind of output — valid UTF-8 with multi-byte characters, and the same with stray
invalid bytes (its text has U+FFFD replacements) — the output is recorded as a `tool.result`
body in a fresh ledger (timed: hashing, storing and its page index), the ledger is closed and
opened again (nothing of the output is left in the process), and then, each timed alone:
the first page, the page at unit 25,000,000, the last page, `--pages` pages at random offsets
(p50 / p99 / max), a literal search whose only hit is at the very end, a literal search with
more than 20 hits from the start, and a regex search. A last row removes the stored index (a
blob written before the index existed) and times the first page read, which builds it again.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from comal.evidence.read import EvidencePage, read_evidence
from comal.ledger.store import Ledger
from comal.session import paged
from comal.testing.sessions import SessionBuilder

_LINE = "2026-01-01T00:00:00Z INFO worker ok ünïcödé 😀 item processed successfully\n"


def output_bytes(mb: int, invalid: bool) -> bytes:
    """About `mb` MiB of log lines, a needle on the last line, optionally invalid UTF-8."""
    line = _LINE.encode()
    if invalid:
        line = line.replace(b"ok", b"ok\xff\xc3", 1)
    body = line * (mb * 1024 * 1024 // len(line))
    return body + b"FATAL: the needle at the end\n"


def _ms(run: Callable[[], EvidencePage]) -> float:
    start = time.perf_counter()
    page = run()
    elapsed = (time.perf_counter() - start) * 1e3
    assert page.total_units > 0
    return elapsed


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_output(directory: Path, label: str, body: bytes, pages: int) -> list[str]:
    """The rows for one output (see the module docstring)."""
    path = directory / f"{label}.db"
    size_mb = len(body) / 1024 / 1024
    with Ledger.open(path) as ledger:
        builder = SessionBuilder(ledger)
        builder.user("dump")
        start = time.perf_counter()
        (result,) = builder.turn("", [("Bash", {"command": "cat huge.log"}, body, 0)])
        stored = (time.perf_counter() - start) * 1e3
        sid, ref = builder.session_id, result.id
    paged._MEMO.clear()  # a fresh process holds no index
    rows = [
        f"| {label}: store {size_mb:.0f} MB output (sha256, blob, page index) | {stored:.0f} ms |"
    ]
    with Ledger.open(path) as ledger:
        total = read_evidence(ledger, sid, ref, limit=1).total_units
        paged._MEMO.clear()

        def read(**kwargs: object) -> Callable[[], EvidencePage]:
            return lambda: read_evidence(ledger, sid, ref, **kwargs)  # type: ignore[arg-type]

        first = _ms(read())
        middle = _ms(read(offset=min(25_000_000, total)))
        last = _ms(read(offset=total - 100))
        rng = random.Random(1)
        times = [_ms(read(offset=rng.randrange(total))) for _ in range(pages)]
        at_end = _ms(read(search="FATAL"))
        many = _ms(read(search="processed"))
        regex = _ms(read(search=r"FATAL: \w+", regex=True))
    rows += [
        f"| {label}: first page, first read after open | {first:.1f} ms |",
        f"| {label}: page at unit 25,000,000 | {middle:.1f} ms |",
        f"| {label}: last page | {last:.1f} ms |",
        f"| {label}: {pages} pages at random offsets | p50 {_pct(times, 0.5):.1f} ms · p99"
        f" {_pct(times, 0.99):.1f} ms · max {max(times):.1f} ms |",
        f"| {label}: literal search, one hit at the very end | {at_end:.0f} ms |",
        f"| {label}: literal search, 20 hits from the start and a next | {many:.1f} ms |",
        f"| {label}: regex search, one hit at the end (whole text) | {regex:.0f} ms |",
    ]
    conn = sqlite3.connect(path)
    # (A ledger with no page index table: every blob reads as if written before it.)
    with contextlib.suppress(sqlite3.OperationalError):
        conn.execute("DELETE FROM blob_pages")
    conn.commit()
    conn.close()
    paged._MEMO.clear()
    with Ledger.open(path) as ledger:
        first = _ms(lambda: read_evidence(ledger, sid, ref, offset=total // 2))
        paged._MEMO.clear()
        again = _ms(lambda: read_evidence(ledger, sid, ref, offset=total // 2))
    rows.append(
        f"| {label}: blob stored without an index, first page read (builds and stores it) |"
        f" {first:.0f} ms, then {again:.1f} ms |"
    )
    return rows


def main() -> None:
    """Run and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print("| measure | result |\n|---|---|")
        for label, invalid in (("valid UTF-8", False), ("invalid UTF-8", True)):
            body = output_bytes(args.mb, invalid)
            rows = bench_output(Path(tmp), label, body, args.pages)
            del body
            print("\n".join(rows), flush=True)


if __name__ == "__main__":
    main()
