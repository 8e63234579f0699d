"""What `comal --help`, `--version` and the read-only commands must not import: the agent,
the providers and their HTTP client, asyncio and ssl for `--help`, Textual anywhere but the TUI.
Checked in a fresh interpreter (sys.modules after the command ran), never by timing; the
figures are in docs/benchmarks.md (`perf/startup_bench.py`)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from comal.cli.flags import EFFORTS
from comal.cli.main import COMMANDS, full_parser
from comal.config import EFFORTS as CONFIG_EFFORTS

PROBE = """
import sys
from comal.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("LOADED", " ".join(sorted(sys.modules)), file=sys.stderr)
"""

HELP_MUST_NOT_LOAD = (
    "asyncio",
    "ssl",
    "sqlite3",
    "httpx2",
    "textual",
    "msgspec",
    "comal.config",
    "comal.agent",
    "comal.ledger",
    "comal.providers",
    "comal.context",
    "comal.tools",
)
LISTING_MUST_NOT_LOAD = ("httpx2", "textual", "comal.providers", "comal.agent.core.loop")


def _loaded(args: list[str], cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("LOADED ")]
    return set(line.split()[1:])


def _offenders(loaded: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == b or m.startswith(b + ".") for b in banned))


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["--alowedTools", "x"]])
def test_help_and_version_load_nothing_heavy(args: list[str], tmp_path: Path) -> None:
    loaded = _loaded(args, tmp_path)
    assert "comal.cli.main" in loaded  # the probe ran the CLI
    assert _offenders(loaded, HELP_MUST_NOT_LOAD) == []


@pytest.mark.parametrize("args", [["sessions"], ["sessions", "--all", "--json"], ["show", "-h"]])
def test_the_listing_loads_neither_the_http_client_nor_the_tui(
    args: list[str], tmp_path: Path
) -> None:
    loaded = _loaded(args, tmp_path)
    assert "comal.cli.cmd_sessions" in loaded
    assert _offenders(loaded, LISTING_MUST_NOT_LOAD) == []


def test_the_help_listing_is_what_each_command_registers() -> None:
    parser = full_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    registered = {choice.dest: choice.help for choice in sub._choices_actions}
    assert registered == {name: help_text for name, (_, help_text) in COMMANDS.items()}


def test_the_effort_names_are_the_configurations() -> None:
    assert EFFORTS == CONFIG_EFFORTS
