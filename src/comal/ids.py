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


def new_id(prefix: str) -> str:
    """A new prefixed id, e.g. `evt_0193…`; sorts by creation time."""
    return f"{prefix}_{uuid7().hex}"


def now_ms() -> int:
    """Wall-clock time in integer milliseconds UTC (the only clock used for `*_at` fields)."""
    return int(time.time() * 1000)
