"""A core install (no `comal[bench]`, no `comal[chrome]`) names the extra a feature needs in one
line: the optional packages are hidden from a real `comal` process by a `None` module entry,
which makes Python's import of them fail as it would were they not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from comal.cli.timeline import timeline_of, timeline_svg
from comal.errors import MissingExtraError


def comal_without(module: str, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from comal.cli.main import main\n"
        f"raise SystemExit(main({list(argv)!r}))\n"
    )
    env = {**os.environ, "XDG_CONFIG_HOME": str(home / "config"), "COMAL_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=home,
        env=env,
    )


def test_bench_replay_without_numpy_names_the_bench_extra(tmp_path: Path) -> None:
    done = comal_without("numpy", tmp_path, "bench", "replay", str(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "comal: MISSING_EXTRA: comal bench replay needs numpy, which is not installed:"
        " pip install 'comal[bench]'\n",
    )


def test_the_chrome_plugin_without_playwright_names_the_chrome_extra(tmp_path: Path) -> None:
    done = comal_without("playwright", tmp_path, "plugins", "--plugin", "chrome", "--json")
    rows = {row["name"]: row for row in json.loads(done.stdout)["plugins"]}
    assert (done.returncode, rows["chrome"]["loaded"], rows["chrome"]["error"]) == (
        0,
        False,
        "plugin 'chrome' failed to load: MissingExtraError: MISSING_EXTRA: the Chrome plugin"
        " needs playwright, which is not installed: pip install 'comal[chrome]'",
    )


def test_the_timeline_without_matplotlib_names_the_bench_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError) as caught:
        timeline_svg(timeline_of([], 8_000, 7_000), "session")
    assert caught.value.message == (
        "the context timeline (--timeline; an HTML export goes without: --no-timeline) needs"
        " matplotlib, which is not installed: pip install 'comal[bench]'"
    )
