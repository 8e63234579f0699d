"""Shared fixtures: the shared trajectories folder, a fresh ledger, pairing checks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.ledger import Entry, Ledger
from comal.messages import message_from_json

TRAJECTORIES = (Path(__file__).parents[3] / "../shared/trajectories").resolve()
FIXTURES = Path(__file__).parents[2] / "fixtures"


def trajectory(relative: str) -> Path:
    """A file of the shared trajectories, or a skip when the folder is absent."""
    if not TRAJECTORIES.is_dir():
        pytest.skip(f"shared trajectories not present at {TRAJECTORIES}")
    return TRAJECTORIES / relative


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(tmp_path / "ledger.db", durable=False) as book:
        yield book


def assert_paired(entries: list[Entry]) -> None:
    """Every call of an assistant message is answered exactly once, right after it."""
    pending: list[str] = []
    for entry in entries:
        if entry.kind == "tool.result":
            assert pending, f"result {entry.payload['call_id']} without a pending call"
            assert entry.payload["call_id"] == pending.pop(0)
            continue
        if entry.kind in ("message.user", "message.assistant", "message.summary"):
            assert not pending, f"calls {pending} left without results"
        if entry.kind == "message.assistant":
            raw = entry.payload["message"]
            assert isinstance(raw, dict)
            pending = [c.call_id for c in message_from_json(raw).tool_calls]
    assert not pending
