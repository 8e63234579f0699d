"""Running the CLI in-process, for tests that only need what a command prints and returns.

A subprocess costs a fresh interpreter and every import; tests of signals, locks, crashes and
real terminals keep one (`tests/e2e/headless_support.py`). The environment is the test's own
(isolated by `tests/conftest.py`), the working directory is the test's, stdin is empty.
"""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

from comal.cli.main import main


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`comal ARGS` in this process: its exit code and what it wrote to stdout and stderr."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdin = saved
    out.flush()
    written = out.buffer
    assert isinstance(written, io.BytesIO)
    return subprocess.CompletedProcess(
        ["comal", *args], code, written.getvalue().decode("utf-8"), err.getvalue()
    )
