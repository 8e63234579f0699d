"""Identifiers: UUIDv7 session ids (time-sortable) and prefixed entity ids (`evt_…`, `ev_…`)."""

from __future__ import annotations

import hashlib
import os
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(slots=True)
class _Seeded:
    rng: random.Random
    ms: int


_SEEDED: ContextVar[_Seeded | None] = ContextVar("comal_seeded_ids", default=None)

REPRODUCIBLE_EPOCH_MS = 1_767_225_600_000
"""2026-01-01T00:00:00Z: the clock of reproducible ids starts there and ticks once per id."""


@contextmanager
def reproducible_ids(seed: str) -> Iterator[None]:
    """Within the block, new ids come from a generator seeded by `seed`, with a clock that
    ticks one millisecond per id: the same work mints the same ids, in creation order.

    For the replay benchmark only: an id is printed in references and checkpoints, so its
    characters change token counts, and fresh random ids made two runs of the same code
    differ. A live session never uses this (its ids must be unique across machines).
    """
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    token = _SEEDED.set(_Seeded(random.Random(digest), REPRODUCIBLE_EPOCH_MS))
    try:
        yield
    finally:
        _SEEDED.reset(token)


def uuid7(now_ms: int | None = None) -> uuid.UUID:
    """A version-7 UUID: 48-bit Unix milliseconds, then random bits (RFC 9562)."""
    seeded = _SEEDED.get()
    if seeded is not None:
        seeded.ms += 1
        ms = seeded.ms if now_ms is None else now_ms
        rand = seeded.rng.getrandbits(80)
    else:
        ms = int(time.time() * 1000) if now_ms is None else now_ms
        rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return uuid.UUID(int=value)


def new_session_id() -> str:
    """A new session id (UUIDv7, canonical text form)."""
    return str(uuid7())


SHORT_ID_MIN_CHARS = 8
"""A short session id has at least this many characters (more only when two would collide)."""


def session_tail(session_id: str) -> str:
    """The random tail a short session id is cut from: the UUID's last group (48 random bits).

    The leading digits of a UUIDv7 are its creation time, so sessions started close together
    share long prefixes; the tail differs from the first character on.
    """
    return session_id.rsplit("-", 1)[-1].lower()


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def shortest_unique(tails: list[str]) -> dict[str, int]:
    """For each tail, the length (≥ SHORT_ID_MIN_CHARS) of its shortest unique prefix, git-style.

    In sorted order a tail shares its longest prefix with a neighbour, so only neighbours count.
    """
    ordered = sorted(set(tails))
    lengths: dict[str, int] = {}
    for index, tail in enumerate(ordered):
        neighbours = ordered[max(index - 1, 0) : index] + ordered[index + 1 : index + 2]
        need = max([SHORT_ID_MIN_CHARS, *(_common_prefix(tail, n) + 1 for n in neighbours)])
        lengths[tail] = min(need, len(tail))
    return lengths


def new_id(prefix: str) -> str:
    """A new prefixed id, e.g. `evt_0193…`; sorts by creation time."""
    return f"{prefix}_{uuid7().hex}"


def now_ms() -> int:
    """Wall-clock time in integer milliseconds UTC (the only clock used for `*_at` fields)."""
    return int(time.time() * 1000)
