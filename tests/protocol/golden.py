"""Golden files: compare whole objects; `COMAL_REGEN=1` rewrites them for review in the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path

from comal.messages import JSONValue

GOLDEN_DIR = Path(__file__).parent / "golden"


def check_golden(name: str, value: JSONValue) -> None:
    """Assert `value` equals the stored golden JSON (or rewrite it under COMAL_REGEN=1)."""
    path = GOLDEN_DIR / name
    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("COMAL_REGEN") == "1" or not path.exists():
        if os.environ.get("COMAL_REGEN") != "1":
            raise AssertionError(f"missing golden file {path}; run with COMAL_REGEN=1")
        path.write_text(text, encoding="utf-8")
        return
    assert json.loads(path.read_text(encoding="utf-8")) == value, f"{name} differs from golden"
