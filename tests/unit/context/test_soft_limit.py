"""`[context] soft_limit`: a quality budget below the window, in tokens or as a share of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.config import load_config
from comal.errors import ConfigError
from comal.ledger.store import Ledger
from comal.testing.sessions import SessionBuilder, ToolStep
from tests.unit.context.conftest import listing, make_engine


def _config(tmp_path: Path, line: str) -> Path:
    (tmp_path / ".comal").mkdir(exist_ok=True)
    (tmp_path / ".comal" / "config.toml").write_text(f"[context]\n{line}\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("soft_limit = 40000", 40_000),
        ("soft_limit = 0.5", 0.5),
        ('soft_limit = "60%"', 0.6),
        ('soft_limit = "30000"', 30_000),
    ],
)
def test_soft_limit_reads_tokens_or_a_share(tmp_path: Path, line: str, value: float) -> None:
    config = load_config(env={"HOME": str(tmp_path)}, cwd=_config(tmp_path, line))
    assert config.context.soft_limit == value


def test_no_soft_limit_by_default(tmp_path: Path) -> None:
    config = load_config(env={"HOME": str(tmp_path)}, cwd=tmp_path)
    assert config.context.soft_limit is None
    assert config.context.cache_ttl_s == 300


@pytest.mark.parametrize("line", ["soft_limit = 12", "soft_limit = -0.5", 'soft_limit = "big"'])
def test_a_bad_soft_limit_is_a_clear_error(tmp_path: Path, line: str) -> None:
    with pytest.raises(ConfigError, match="soft_limit"):
        load_config(env={"HOME": str(tmp_path)}, cwd=_config(tmp_path, line))


def test_the_soft_limit_lowers_the_threshold_and_views_stay_under_it(ledger: Ledger) -> None:
    window = 64_000
    builder = SessionBuilder(ledger, model="gpt-4o", window=window)
    builder.user("Survey the tree.")
    plain = make_engine(ledger, builder.session_id, window=window)
    soft = make_engine(ledger, builder.session_id, window=window, soft_limit=0.25)
    assert soft.budget().threshold == window // 4 < plain.budget().threshold
    assert (
        make_engine(ledger, builder.session_id, window=window, soft_limit=20_000).budget().threshold
        == 20_000
    )
    twin = SessionBuilder(ledger, model="gpt-4o", window=window)
    twin.user("Survey the tree.")
    largest = 0
    for i in range(60):
        step: list[ToolStep] = [("Bash", {"command": f"grep -rn p{i}"}, listing(f"p{i}", 30), 0)]
        builder.turn(f"part {i}", step)
        twin.turn(f"part {i}", step)
        view = soft.prepare()
        largest = max(largest, view.estimated_tokens)
        assert view.estimated_tokens <= soft.budget().threshold
    # It acted: the session grew far past the soft limit while every view stayed under it.
    assert soft.checkpoints() or any(
        e.kind == "projection" for e in ledger.entries(builder.session_id)
    )
    # The same session with no soft limit and no event is far over it.
    unrelieved = make_engine(ledger, twin.session_id, window=window).view()
    assert unrelieved.estimated_tokens > 2 * soft.budget().threshold
