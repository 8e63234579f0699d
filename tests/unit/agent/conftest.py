"""Agent unit tests open real sessions (real ledger, workspace and tools) on a scripted provider,
with the same bench as the recovery tests."""

from __future__ import annotations

from tests.unit.recovery.conftest import bench

__all__ = ["bench"]
