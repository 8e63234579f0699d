"""Peak memory of storing and paging one 50 MB tool output, in a fresh process.

Run: `.venv/bin/python -m benchmarks.evidence_memory [--mb 50]`. The process measures its own
resident set before the output exists, then builds the output (the bytes a tool returns: held
once), records it as a `tool.result` body in a fresh ledger, reads the first page, a page in
the middle and a literal search through `EvidenceRead`, and prints the peak resident set (Linux
`ru_maxrss`) above that start, against the output's size. The target is ≤ 2 × the size.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
from pathlib import Path

from comal.context.evidence import read_evidence
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    """Measure and print one Markdown row."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger.open(Path(tmp) / "memory.db", durable=True)
        builder = SessionBuilder(ledger)
        builder.user("dump")
        start = _rss_mb()
        line = b"2026-01-01T00:00:00Z INFO worker ok item processed successfully\n"
        # Built in one allocation: the output exists once, as a tool's returned bytes do.
        body = line * (args.mb * 1024 * 1024 // len(line))
        size = len(body)
        (result,) = builder.turn("", [("Bash", {"command": "cat huge.log"}, body, 0)])
        stored = _rss_mb()
        del body
        for kwargs in ({}, {"offset": size // 2}, {"search": "needle"}):
            read_evidence(ledger, builder.session_id, result.id, **kwargs)
        paged = _rss_mb()
        ledger.close()
    mb = size / 1024 / 1024
    print(
        f"| {mb:.0f} MB tool output stored and paged, peak RSS above start | stored"
        f" {stored - start:.0f} MB · paged {paged - start:.0f} MB ({(paged - start) / mb:.1f} ×"
        " the output) |"
    )


if __name__ == "__main__":
    main()
