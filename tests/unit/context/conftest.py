"""Fixtures for context-engine tests: a real ledger in a tmp dir and a session builder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from comal.context.engine import ContextEngine, EngineSettings, FixedParts
from comal.ledger.store import Ledger
from comal.messages import ToolSpec
from comal.testing.sessions import SessionBuilder

BASH = ToolSpec("Bash", "Run a shell command.", {"type": "object", "properties": {}})
FIXED = FixedParts("You are a coding agent.", "Keep answers short.", (BASH,))


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(tmp_path / "ledger.db", durable=False) as opened:
        yield opened


@pytest.fixture
def builder(ledger: Ledger) -> SessionBuilder:
    return SessionBuilder(ledger, model="gpt-4o", window=16_384)


def make_engine(
    ledger: Ledger, session_id: str, window: int = 16_384, **settings: object
) -> ContextEngine:
    return ContextEngine(
        ledger,
        session_id,
        EngineSettings(window_tokens=window, max_output_tokens=4_096, **settings),  # type: ignore[arg-type]
        FIXED,
        model="gpt-4o",
    )


def listing(tag: str, lines: int) -> str:
    """A realistic file listing / log of about 12 tokens per line."""
    return "\n".join(
        f"src/{tag}/module_{i}.py:{i}: def handler_{i}(x): return x * {i}" for i in range(lines)
    )
