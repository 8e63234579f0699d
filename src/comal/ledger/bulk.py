"""Bulk work on many ledger entries at once: decoding a session's rows, indexing a resumed one.

Such work makes only live, acyclic objects (dicts, entries, blocks), thousands of them: the
cyclic garbage collector would walk every object of the process again and again while they
pile up, for nothing. It is paused for the duration, and what the work made is then moved to
the collector's oldest generation in one pass (`paused_gc`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

BULK_ENTRIES = 256
"""From this many entries on, decoding or indexing them runs with the cyclic collector paused
(`paused_gc`)."""


@dataclass(slots=True)
class Pause:
    """A pause of the collector (`paused_gc`); set `settle` for bulk work."""

    settle: bool = False
    """Whether what the block made is moved to the collector's oldest generation when it ends,
    in one pass, before the collector runs again (`BULK_ENTRIES` or more entries: a pass also
    walks whatever else is young)."""


@contextmanager
def paused_gc(*, settle: bool = False) -> Iterator[Pause]:
    """No cyclic garbage collection inside the block (restored after, if it was on).

    Decoding thousands of rows creates only live, acyclic objects; the collector would walk
    every object of the process again and again while they pile up, for nothing. With
    `settle` (or `Pause.settle` set inside), they are then moved to the oldest generation in
    one pass (a collection of the two young generations), before the collector is on again:
    left to it, they would be walked by the next young collection and again by the one that
    promotes them, at whatever later moments those come (inside the next request's
    preparation, often).
    """
    was_on = gc.isenabled()
    gc.disable()
    pause = Pause(settle)
    try:
        yield pause
    finally:
        if was_on:
            if pause.settle:
                gc.collect(1)
            gc.enable()
