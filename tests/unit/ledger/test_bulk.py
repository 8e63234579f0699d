"""The collector pause around bulk decoding: what the work made ends in the oldest generation,
garbage is still collected, and nothing frozen on purpose is thawed."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from comal.ledger.bulk import paused_gc


class Node:
    """A tracked object that can take part in a cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.enable()
    yield
    if not was_on:
        gc.disable()


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_settled_work_lands_in_the_oldest_generation_unwalked() -> None:
    with paused_gc(settle=True):
        made = [Node() for _ in range(1_000)]
        assert not gc.isenabled()
    assert gc.isenabled()
    assert _in_generation(made[0], 2)
    assert _in_generation(made[-1], 2)
    assert not _in_generation(made[0], 0)
    assert gc.get_freeze_count() == 0


def test_without_settle_the_work_stays_young() -> None:
    gc.collect()
    with paused_gc():
        made = Node()
    assert _in_generation(made, 0)


def test_cyclic_garbage_made_in_the_block_is_still_freed() -> None:
    with paused_gc(settle=True):
        a, b = Node(), Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
    assert alive() is not None  # a cycle outlives the pause...
    gc.collect()
    assert alive() is None  # ...and the next full collection frees it


def test_objects_frozen_on_purpose_stay_frozen() -> None:
    kept = Node()
    gc.freeze()
    try:
        with paused_gc(settle=True):
            made = Node()
        # Not the freeze count: another thread ending frees frozen objects and lowers it. A
        # frozen object is tracked yet in no generation; a thaw would put `kept` in the oldest.
        assert gc.get_freeze_count() > 0
        assert gc.is_tracked(kept)
        assert not any(_in_generation(kept, generation) for generation in range(3))
        assert _in_generation(made, 2)  # settled by collecting the young generations
    finally:
        gc.unfreeze()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with paused_gc(settle=True):
        pass
    assert not gc.isenabled()
