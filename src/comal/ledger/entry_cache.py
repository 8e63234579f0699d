"""Decoded entries kept per session, so reading a session again costs no SQL and no JSON.

A session's entries are read (and their payloads parsed) by recovery, by the context engine
on every `prepare()`, by reports: the same rows, over and over. Entries are never updated or
deleted and every new one takes a seq above all others, so the entries a read returned stay
exactly the ledger's first entries of that session; only newer ones can appear. The cache keeps
them and asks SQLite only for rows after the last seq it holds, and not even that while the
database is unchanged: on SQLite `PRAGMA data_version` moves when another connection commits,
and the connection's `total_changes` when this one writes (`Engine.data_version`).

Invariants:
- A read through the cache returns exactly what `select_entries` would (same entries, same
  order); nothing is served inside an open transaction (uncommitted rows could roll back).
- It holds a session's own entries. The `Ledger` serves a session's history from it only when
  that history is those entries (not a fork, no conversation rewind: `ledger/history.py`), and
  reads the history as before otherwise.
- Bounded: the most recently read few sessions are kept; an evicted one is simply read again.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

from comal.ledger.entry import Entry
from comal.ledger.history import REWOUND_KIND

MAX_SESSIONS = 4
"""Sessions kept: the one being worked on, its children being coordinated, a listing's."""

_SEQ = attrgetter("seq")


@dataclass(slots=True)
class CachedSession:
    """One session's own entries as read so far."""

    version: object
    fork: bool
    """Whether the session is a fork (its history starts with its parent's; set at creation)."""
    entries: list[Entry] = field(default_factory=list)
    rewinds: bool = False
    """Whether one of its entries is a conversation rewind (which hides earlier entries)."""

    def extend(self, new: list[Entry]) -> None:
        """Take newer entries."""
        self.entries.extend(new)
        self.rewinds = self.rewinds or any(
            e.kind == REWOUND_KIND and e.payload.get("conversation") is True for e in new
        )

    def history_is_own(self, *, rewound: bool) -> bool:
        """Whether the session's history (`history.py`) is exactly its own entries: not a fork,
        and no conversation rewind to leave entries out (or `rewound`, which keeps them)."""
        return not self.fork and (rewound or not self.rewinds)

    def after(self, after_seq: int) -> list[Entry]:
        """The entries with `seq > after_seq` (a new list)."""
        found = self.entries
        if not found or after_seq >= found[-1].seq:
            return []
        return found[bisect_right(found, after_seq, key=_SEQ) :]


class EntryCache:
    """The decoded entries of the last few sessions read (see module docstring)."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, CachedSession] = OrderedDict()

    def session(
        self,
        version: object,
        session_id: str,
        read: Callable[[int], tuple[list[Entry], bool]],
    ) -> CachedSession:
        """The session brought up to date; `version` is the engine's `data_version` (equal to
        the cached one only when nothing was committed since), `read(seq)` fetches its own rows
        after `seq` and whether it is a fork (raising for an unknown session)."""
        cached = self._sessions.get(session_id)
        if cached is None:
            entries, fork = read(0)
            cached = CachedSession(version, fork)
            cached.extend(entries)
            self._sessions[session_id] = cached
            if len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        elif cached.version != version:
            last = cached.entries[-1].seq if cached.entries else 0
            cached.extend(read(last)[0])
            cached.version = version
        self._sessions.move_to_end(session_id)
        return cached

    def clear(self) -> None:
        """Forget every session (nothing is stale; this only frees memory)."""
        self._sessions.clear()
