"""Fixtures shared by the end-to-end tests (`workspace` comes from tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The COMAL_HOME a run's subprocess is given (`env_home`), beside the workspace."""
    return tmp_path / "home"
