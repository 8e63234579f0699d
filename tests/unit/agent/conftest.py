"""Fixtures for the agent unit tests: a real ledger file in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.ledger.store import Ledger


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(tmp_path / "ledger.db", durable=False) as opened:
        yield opened
