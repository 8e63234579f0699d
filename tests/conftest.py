"""Shared fixtures. The only autouse fixture isolates the environment: every test gets its own
COMAL_HOME and XDG directories, and no provider keys leak in from the machine. `workspace` is a
fresh directory under the test's tmp_path (a folder's conftest may give its own); `outside` one
outside it and outside /tmp, for the sandbox tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_LEAKY = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "COMAL_CONTEXT_WINDOW",
    "COMAL_LARGE_OUTPUT_THRESHOLD_BYTES",
    "COMAL_LEDGER_URL",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path_factory.mktemp("env")
    for var in _LEAKY:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COMAL_HOME", str(root / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(root / "data"))
    monkeypatch.setenv("HOME", str(root))
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the workspace and outside /tmp (which the sandbox replaces)."""
    path = Path(tempfile.mkdtemp(prefix="comal-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
