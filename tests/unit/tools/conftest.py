"""Fixtures for tool tests: a real workspace directory and a context over it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from comal.config import PermissionsConfig
from comal.tools.base import ToolContext
from comal.tools.permissions import PermissionPolicy

MakeContext = Callable[..., ToolContext]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def make_ctx(workspace: Path) -> MakeContext:
    def make(mode: str = "workspace-write", cancel: asyncio.Event | None = None) -> ToolContext:
        policy = PermissionPolicy(PermissionsConfig(mode=mode), workspace)
        return ToolContext(workspace, policy, dict(os.environ), cancel=cancel)

    return make


@pytest.fixture
def ctx(make_ctx: MakeContext) -> ToolContext:
    return make_ctx()
