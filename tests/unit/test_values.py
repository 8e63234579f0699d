"""`@value` classes behave as frozen dataclasses do, and the type checker keeps them frozen."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest
from mypy import api

from comal.ledger.entry import Entry
from comal.messages import Message, TextPart, ToolCallPart
from comal.values import value


@value
class Point:
    x: int
    y: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenPoint:
    x: int
    y: int = 0


def test_equality_and_hash_are_a_frozen_dataclass_s() -> None:
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(2, 1)
    assert hash(Point(1, 2)) == hash(FrozenPoint(1, 2))  # both hash the tuple of fields
    assert {Point(1, 2): "a"}[Point(1, 2)] == "a"
    assert len({Point(1), Point(1), Point(2)}) == 2


def test_values_are_slotted_and_replace_makes_a_new_one() -> None:
    point = Point(1)
    assert not hasattr(point, "__dict__")
    moved = dataclasses.replace(point, y=5)
    assert (point.y, moved.y) == (0, 5)


def test_bulk_types_are_values() -> None:
    call = ToolCallPart("c1", "Read", {"path": "a.py"})
    message = Message("assistant", (TextPart("hi"), call))
    assert message.tool_calls == (call,)
    assert message == Message("assistant", (TextPart("hi"), call))
    assert hash(TextPart("hi")) == hash(TextPart("hi"))
    entry = Entry(1, "evt_1", "s", "tool.result", {}, "sha256:x", 0)
    assert dataclasses.replace(entry, seq=2).seq == 2
    with pytest.raises(TypeError):
        hash(entry)  # its payload is a dict, as with a frozen dataclass


def test_the_type_checker_refuses_assigning_a_field(tmp_path: Path) -> None:
    source = tmp_path / "snippet.py"
    source.write_text(
        textwrap.dedent(
            """
            from comal.values import value

            @value
            class Point:
                x: int

            def move(point: Point) -> None:
                point.x = 3
            """
        )
    )
    out, _, status = api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(source)]
    )
    assert status == 1
    assert 'Property "x" defined in "Point" is read-only' in out
