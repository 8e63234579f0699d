"""Heavy libraries load only where used: `--help` and the ordinary commands start without
numpy or matplotlib (only `comal bench` needs them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("numpy", "matplotlib")

PROBE = """
import sys
from comal.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})
print("HEAVY", heavy, file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args", [["--help"], ["sessions"], ["verify"], ["models"], ["show", "--help"]]
)
def test_ordinary_commands_do_not_import_numpy(args: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=set(HEAVY)), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert "HEAVY []" in done.stderr, done.stderr


def test_the_probe_sees_numpy_when_bench_is_imported(tmp_path: Path) -> None:
    probe = (
        "import sys, comal.cli.cmd_bench as b\nimport comal.replay\nprint('numpy' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "True"
