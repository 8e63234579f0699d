"""A session's history: its own entries, its parent's through the fork point, minus rewinds.

Invariants:
- Nothing is copied or hidden in storage. A fork's row names its parent and the parent's last
  entry it includes (`fork_seq`); its history is the parent's history through that seq followed
  by its own entries. Seqs are global, so the joined list stays in seq order.
- A `session.rewound` entry whose payload has `conversation: true` takes the entries after
  `to_seq` and before itself out of the history; the entries stay in the ledger and the rewind
  stays in the history as the marker of where the conversation went back.
- The parent's locks and its `session.finished` are not the fork's: a fork of a finished
  session is itself open.
"""

from __future__ import annotations

from collections.abc import Collection

from comal.ledger.conn import Conn
from comal.ledger.entry import Entry
from comal.ledger.entry_rows import select_entries
from comal.ledger.records.kinds import Kind
from comal.ledger.session_rows import select_session

REWOUND_KIND = Kind.SESSION_REWOUND
"""The entry kind a rewind records (docs/ledger.md)."""
FORKED_KIND = Kind.SESSION_FORKED
"""The first entry of a fork, naming its parent and fork point."""
NOT_INHERITED = frozenset({Kind.LOCK_ACQUIRED, Kind.LOCK_RECLAIMED, Kind.SESSION_FINISHED})
"""Kinds of the parent that a fork's history leaves out: they describe the parent's process."""


def _hidden_ranges(entries: list[Entry]) -> list[tuple[int, int]]:
    """(after, before) seq ranges that conversation rewinds take out of the history."""
    ranges = []
    for entry in entries:
        if entry.kind != REWOUND_KIND or entry.payload.get("conversation") is not True:
            continue
        to_seq = entry.payload.get("to_seq")
        if isinstance(to_seq, int):
            ranges.append((to_seq, entry.seq))
    return ranges


def _raw_history(
    conn: Conn, session_id: str, through: int | None, kinds: Collection[str] | None
) -> list[Entry]:
    """The history before rewinds apply, with rewinds always included."""
    info = select_session(conn, session_id)
    wanted = None if kinds is None else {*kinds, REWOUND_KIND}
    own = select_entries(conn, session_id, 0, wanted)
    if through is not None:
        own = [e for e in own if e.seq <= through]
    if info is None or info.fork_of is None or info.fork_seq is None:
        return own
    limit = info.fork_seq if through is None else min(info.fork_seq, through)
    inherited = _raw_history(conn, info.fork_of, limit, wanted)
    inherited = [e for e in inherited if e.kind not in NOT_INHERITED]
    return inherited + own


def history(
    conn: Conn,
    session_id: str,
    after_seq: int = 0,
    kinds: Collection[str] | None = None,
    *,
    rewound: bool = False,
) -> list[Entry]:
    """The session's history with `seq > after_seq`, in seq order, optionally of some kinds.

    With `rewound`, what conversation rewinds went back over is kept: the order in which
    things really happened (a rewind of files needs it)."""
    info = select_session(conn, session_id)
    if info is not None and info.fork_of is None and rewound:
        return select_entries(conn, session_id, after_seq, kinds)
    if info is not None and info.fork_of is None:
        # The common case: one query, and rewinds only when the session has any.
        rewinds = select_entries(conn, session_id, 0, (REWOUND_KIND,))
        if not _hidden_ranges(rewinds):
            return select_entries(conn, session_id, after_seq, kinds)
    entries = _raw_history(conn, session_id, None, kinds)
    ranges = [] if rewound else _hidden_ranges(entries)
    return [
        e
        for e in entries
        if e.seq > after_seq
        and (kinds is None or e.kind in kinds)
        and not any(low < e.seq < high for low, high in ranges)
    ]
