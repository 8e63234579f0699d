"""What the engine has read of one session: its entries and what is folded from them.

The ledger only grows, so everything here is extended with each new entry once, never
rescanned: the entries themselves, the conversation index and its blocks, the anchors, the
recorded outputs and cut replies, per-kind lists, and scans memoized by the last seq they saw
(the same last seq means the same entries and the same answer).

A conversation rewind is the one exception: it takes earlier entries out of the history, so
nothing built from them by extension holds any more. The reader then starts over, as a new
engine would, and counts the restart (`restarts`) so that the engine drops what it built from
an earlier reading too (its incremental view).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import TypeVar, cast

from comal.context.measure.anchors import AnchorIndex
from comal.context.measure.budget import session_outputs, truncated_reserves
from comal.context.view.conversation import Block, ConversationIndex
from comal.ledger.bulk import BULK_ENTRIES, paused_gc
from comal.ledger.entry import Entry
from comal.ledger.history import REWOUND_KIND
from comal.ledger.records import SessionRewound
from comal.ledger.store import Ledger

T = TypeVar("T")


class SessionReader:
    """The entries of one session read so far, and the folds kept over them."""

    def __init__(self, ledger: Ledger, session_id: str) -> None:
        self.ledger = ledger
        self.session_id = session_id
        self.restarts = 0
        """How many times a conversation rewind made the reader start over."""
        self._start_over()

    def _start_over(self) -> None:
        self._entries: list[Entry] = []
        self.index = ConversationIndex()
        """The conversation index of the entries read (in step with them after `blocks`)."""
        self._indexed = 0
        self._blocks: list[Block] = []
        self._blocks_seq = -1
        self._memo: dict[str, tuple[int, object]] = {}
        self.anchors = AnchorIndex()
        self.outputs: list[int] = []
        """Output tokens of every recorded reply (`budget.session_outputs`)."""
        self.truncated: list[int] = []
        """The reserves of replies cut at their output limit (`budget.truncated_reserves`)."""
        self._kind_lists: dict[frozenset[str], tuple[int, list[Entry]]] = {}

    def entries(self) -> list[Entry]:
        """The session's entries, read incrementally from the ledger (shared: do not modify)."""
        last = self._entries[-1].seq if self._entries else 0
        new = self.ledger.entries(self.session_id, after_seq=last)
        if any(e.kind == REWOUND_KIND and SessionRewound.from_entry(e).conversation for e in new):
            # A conversation rewind takes earlier entries out of the history: read it again.
            self._start_over()
            self.restarts += 1
            new = self.ledger.entries(self.session_id)
        if new:
            with paused_gc(settle=True) if len(new) >= BULK_ENTRIES else nullcontext():
                self._entries.extend(new)
                self.anchors.extend(new)
                self.outputs.extend(session_outputs(new))
                self.truncated.extend(truncated_reserves(new))
        return self._entries

    def read(self) -> list[Entry]:
        """The entries as last read, without asking the ledger for newer ones."""
        return self._entries

    def of_kinds(self, *kinds: str) -> list[Entry]:
        """The entries read so far that are of `kinds`, in order (extended, never rescanned).

        The engine's scans read only a few kinds; given just those entries they answer the
        same.
        """
        key = frozenset(kinds)
        fed, found = self._kind_lists.get(key, (0, []))
        if fed < len(self._entries):
            found.extend(e for e in self._entries[fed:] if e.kind in key)
            self._kind_lists[key] = (len(self._entries), found)
        return found

    def at_last_seq(self, name: str, compute: Callable[[], T]) -> T:
        """`compute()` for the entries as last read, memoized under `name` until one more is
        read (the caller reads first: `entries`)."""
        last = self._entries[-1].seq if self._entries else 0
        hit = self._memo.get(name)
        if hit is None or hit[0] != last:
            hit = (last, compute())
            self._memo[name] = hit
        return cast(T, hit[1])

    def blocks(self) -> list[Block]:
        """The conversation blocks of the entries read, rebuilt only when more were read."""
        entries = self._entries
        last = entries[-1].seq if entries else 0
        if last != self._blocks_seq:
            # A resumed session indexes all its entries at once: only live objects are made.
            bulk = len(entries) - self._indexed >= BULK_ENTRIES
            with paused_gc(settle=True) if bulk else nullcontext():
                self.index.extend(entries[self._indexed :])
                self._indexed = len(entries)
                self._blocks = self.index.blocks()
            self._blocks_seq = last
        return self._blocks
