"""Bulk work on many ledger entries at once: decoding a session's rows, indexing a resumed one.

Such work makes only live, acyclic objects (dicts, entries, blocks), thousands of them: the
cyclic garbage collector would walk every object of the process again and again while they
pile up, for nothing. It is paused for the duration (`paused_gc`), and what the work made is
then moved to the collector's oldest generation at once (`settle`): left to the collector, it
would be walked by the next young collection and again by the one that promotes it, at
whatever later moments those come (inside the next request's preparation, often).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

BULK_ENTRIES = 256
"""From this many entries on, decoding or indexing them runs with the cyclic collector paused
(`paused_gc`)."""


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


def settle() -> None:
    """Move the objects bulk work just made to the collector's oldest generation, now, in one
    pass (a collection of the two young generations; nothing when the collector is off).

    Only after bulk work (`BULK_ENTRIES` or more entries): a pass also walks what else is young.
    """
    if gc.isenabled():
        gc.collect(1)
