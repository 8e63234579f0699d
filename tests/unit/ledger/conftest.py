"""Fixtures for the ledger tests: a real ledger, on each engine (`ledger_target`, `ledger`), or
an SQLite file for the tests of the file itself (`ledger_path`: damage, salvage, the fixture).

`ledger_target` is the one parametrized fixture every engine-neutral test takes: its tests run
as `[sqlite]` and `[postgresql]` (see `tests/pg_support.py` for when the latter skips).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.ledger import Ledger
from tests.pg_support import ENGINES
from tests.pg_support import ledger_target as engine_target


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "ledger.db"


@pytest.fixture(params=ENGINES)
def ledger_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A ledger's target (a file path, or a PostgreSQL URL) on each engine in turn."""
    with engine_target(request.param, tmp_path) as target:
        yield target


@pytest.fixture
def ledger(ledger_target: str) -> Iterator[Ledger]:
    with Ledger.open(ledger_target) as opened:
        yield opened
