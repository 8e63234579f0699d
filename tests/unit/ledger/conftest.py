"""Fixtures for the ledger tests: a real ledger file in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.ledger import Ledger


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "ledger.db"


@pytest.fixture
def ledger(ledger_path: Path) -> Iterator[Ledger]:
    with Ledger.open(ledger_path) as opened:
        yield opened
