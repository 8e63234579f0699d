"""What the sandbox tests share: they run only where bubblewrap can confine a command (always
in CI, where `.ci/run` makes sure it can), and the `outside` fixture lives in tests/conftest.py."""

from __future__ import annotations

import os

import pytest

from comal.tools.sandbox import probe

NEEDS_BUBBLEWRAP = pytest.mark.skipif(
    probe() is not None and os.environ.get("CI") != "true",
    reason=f"bubblewrap unusable here: {probe()}",
)
