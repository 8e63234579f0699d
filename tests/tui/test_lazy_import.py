"""`comal -p` never loads Textual: the TUI is imported only when it opens."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import argparse, sys
import comal.agent.turns
from comal.cli import cmd_run, flags
parser = argparse.ArgumentParser()
flags.register_top_level(parser, task=True)
parser.parse_args(["-p", "task"])
print(sorted(m for m in sys.modules if m == "textual" or m.startswith(("textual.", "comal.tui"))))
"""


def test_the_headless_path_does_not_import_textual() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
