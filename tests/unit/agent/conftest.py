"""Agent unit tests open real sessions (real ledger, workspace and tools) on a scripted provider,
with the same bench as the recovery tests, or a bare real ledger file in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.ledger.store import Ledger
from tests.unit.recovery.conftest import bench

__all__ = ["bench", "ledger"]


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(tmp_path / "ledger.db", durable=False) as opened:
        yield opened
