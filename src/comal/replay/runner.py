"""Running the replay over many files: one file per worker, results in a stable order.

Files are replayed in worker processes (`jobs`, default 1 = a thread of this process); each
worker parses its file and replays every transcript in it. Rows come back in file order
whatever order workers finish in, so the report is deterministic apart from timings and from
Comal's rows, whose requests carry fresh ledger ids (`evt_…`, time and random bits) that do not
tokenize to the same count from one run to the next. A file
that cannot be read as a session is skipped and listed with its reason (`ReplayResult.skipped`);
the others are replayed. `split` keeps one half of the files, chosen by a hash of each file's
path relative to the PATH it was found under (`replayer.split_of`): the same half on every
machine and checkout, so a rule tuned on one half is judged on the other.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from comal.errors import ImportFormatError
from comal.messages import JSONObject
from comal.replay.metrics import aggregate
from comal.replay.replayer import POLICIES, SPLITS, replay_file, split_of, survey
from comal.usage import PROMPT_CACHE_TTL_S


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """Rows per (session, policy, window) and aggregates per (policy, window)."""

    rows: tuple[JSONObject, ...]
    aggregate: tuple[JSONObject, ...]
    files: int
    skipped: tuple[tuple[str, str], ...] = ()
    """Files that could not be read: (path, reason)."""
    split: str | None = None
    """The half replayed (`A`/`B`, `replayer.split_of`), None for every file."""
    found: int = 0
    """Session files found under the paths before the split chose its half."""
    unread: tuple[tuple[str, str], ...] = ()
    """Files of the folders searched (in the half chosen) that no importer reads: (path,
    reason). They are skipped too, but never fail `--strict`."""


def _replay_or_reason(
    path: str,
    windows: Sequence[int],
    policies: Sequence[str],
    fmt: str | None,
    cache_ttl_s: float | None,
) -> tuple[list[JSONObject], str | None]:
    """A worker's unit: the file's rows, or why it could not be read."""
    try:
        return replay_file(path, windows, policies, fmt, cache_ttl_s), None
    except ImportFormatError as exc:
        return [], str(exc)


def parse_windows(text: str) -> list[int]:
    """Window sizes from `32k,64k,128000` (k = 1,000).

    Raises:
        ValueError: a size that is not a positive integer (optionally with `k`).
    """
    out = []
    for item in text.split(","):
        item = item.strip().lower()
        if not item:
            continue
        scale = 1000 if item.endswith("k") else 1
        number = item.removesuffix("k")
        if not number.isdigit() or int(number) <= 0:
            raise ValueError(f"bad window size {item!r}: use e.g. 64k or 64000")
        out.append(int(number) * scale)
    if not out:
        raise ValueError("no window sizes given")
    return out


def parse_policies(text: str | None) -> list[str]:
    """Policy names from a comma list (all of them when None).

    Raises:
        ValueError: an unknown policy name.
    """
    if not text:
        return list(POLICIES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise ValueError(f"unknown policy {unknown[0]!r}; one of {', '.join(POLICIES)}")
    return names


async def run_replay(
    paths: Sequence[Path],
    windows: Sequence[int],
    policies: Sequence[str],
    *,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
    fmt: str | None = None,
    cache_ttl_s: float | None = PROMPT_CACHE_TTL_S,
    split: str | None = None,
    match: str | None = None,
) -> ReplayResult:
    """Replay every session file under `paths` (`fmt`: skip format detection; `cache_ttl_s`:
    the prompt cache's time-to-live, None for a cache that never expires; `split`: only the
    files of that half, `A` or `B`, by `replayer.split_of` of their relative path; `match`:
    only the files whose relative path holds it, as `--explain` replays one session).

    Raises:
        ValueError: a split that is not `A` or `B`.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"bad split {split!r}: A or B")
    everything, others = survey(paths)
    files = [
        path
        for path, key in everything
        if (split is None or split_of(key) == split) and (match is None or match in key)
    ]
    unread = tuple(
        (str(path), why)
        for path, key, why in others
        if (split is None or split_of(key) == split) and match is None
    )
    loop = asyncio.get_running_loop()
    work = partial(
        _replay_or_reason,
        windows=list(windows),
        policies=list(policies),
        fmt=fmt,
        cache_ttl_s=cache_ttl_s,
    )
    results: list[list[JSONObject]] = [[] for _ in files]
    reasons: list[str | None] = [None for _ in files]

    async def one(index: int, pool: ProcessPoolExecutor | None) -> None:
        if pool is None:
            rows, reason = await asyncio.to_thread(work, str(files[index]))
        else:
            rows, reason = await loop.run_in_executor(pool, work, str(files[index]))
        results[index] = rows
        reasons[index] = reason
        if progress is not None:
            done = f"skipped: {reason}" if reason else f"{len(rows)} rows"
            progress(f"replayed {files[index].name} ({done})")

    if jobs > 1:
        # fork: a spawned worker would re-run the caller's `__main__` (the CLI itself).
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            await asyncio.gather(*(one(i, pool) for i in range(len(files))))
    else:
        for index in range(len(files)):
            await one(index, None)
    rows = [r for chunk in results for r in chunk]
    skipped = tuple((str(f), r) for f, r in zip(files, reasons, strict=True) if r is not None)
    return ReplayResult(
        tuple(rows), tuple(aggregate(rows)), len(files), skipped, split, len(everything), unread
    )
