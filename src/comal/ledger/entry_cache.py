"""Decoded entries kept per session, so reading a session again costs no SQL and no JSON.

A session's entries are read (and their payloads parsed) by recovery, by the context engine
on every `prepare()`, by reports: the same rows, over and over. Entries are never updated or
deleted and every new one takes a seq above all others, so the entries a read returned stay
exactly the ledger's first entries of that session; only newer ones can appear. The cache keeps
them and asks SQLite only for rows after the last seq it holds, and not even that while the
database is unchanged: `PRAGMA data_version` moves when another connection commits, and the
connection's `total_changes` when this one writes.

Invariants:
- A read through the cache returns exactly what `select_entries` would (same entries, same
  order); nothing is served inside an open transaction (uncommitted rows could roll back).
- Bounded: the most recently read few sessions are kept; an evicted one is simply read again.
"""

from __future__ import annotations

import gc
import sqlite3
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter

from comal.ledger.entry import Entry

BULK_ENTRIES = 256
"""From this many entries on, decoding or indexing them runs with the cyclic collector paused
(`paused_gc`)."""
MAX_SESSIONS = 4
"""Sessions kept: the one being worked on, its children being coordinated, a listing's."""

_SEQ = attrgetter("seq")


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside the block (restored after, if it was on).

    Decoding thousands of rows creates only live, acyclic objects; the collector would walk
    every object of the process again and again while they pile up, for nothing.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@dataclass(slots=True)
class _Session:
    version: tuple[int, int]
    entries: list[Entry] = field(default_factory=list)


class EntryCache:
    """The decoded entries of the last few sessions read (see module docstring)."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    @staticmethod
    def version(conn: sqlite3.Connection) -> tuple[int, int]:
        """Changes by other connections, and by this one: equal ⇒ no new committed entry."""
        (data_version,) = conn.execute("PRAGMA data_version").fetchone()
        return int(data_version), conn.total_changes

    def entries(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        after_seq: int,
        read: Callable[[int], list[Entry]],
    ) -> list[Entry]:
        """The session's entries after `after_seq`; `read(seq)` fetches rows after `seq`."""
        version = self.version(conn)
        cached = self._sessions.get(session_id)
        if cached is None:
            if after_seq > 0:
                # Only a read from the start may fill the cache: it must hold a whole prefix.
                return read(after_seq)
            cached = _Session(version, read(0))
            self._sessions[session_id] = cached
            if len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        elif cached.version != version:
            last = cached.entries[-1].seq if cached.entries else 0
            cached.entries.extend(read(last))
            cached.version = version
        self._sessions.move_to_end(session_id)
        found = cached.entries
        if not found or after_seq >= found[-1].seq:
            return []
        return found[bisect_right(found, after_seq, key=_SEQ) :]

    def clear(self) -> None:
        """Forget every session (nothing is stale; this only frees memory)."""
        self._sessions.clear()
