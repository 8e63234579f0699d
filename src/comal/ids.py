"""Identifiers: UUIDv7 session ids (time-sortable) and prefixed entity ids (`evt_…`, `ev_…`)."""

from __future__ import annotations

import os
import time
import uuid


def uuid7(now_ms: int | None = None) -> uuid.UUID:
    """A version-7 UUID: 48-bit Unix milliseconds, then random bits (RFC 9562)."""
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
