"""Recorded SSE bodies used by the protocol tests (files under `tests/protocol/sse/`)."""

from __future__ import annotations

from pathlib import Path

SSE_DIR = Path(__file__).parent / "sse"


def sse_lines(name: str) -> list[str]:
    """The fixture's lines, without line terminators (as `aiter_lines` yields them)."""
    return (SSE_DIR / f"{name}.sse").read_text(encoding="utf-8").splitlines()


def sse_bytes(name: str) -> bytes:
    """The fixture as raw response bytes."""
    return (SSE_DIR / f"{name}.sse").read_bytes()
