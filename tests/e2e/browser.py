"""Opening a page in a real headless Chromium (Debian's `chromium`, installed by `.ci/run`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
)
ARTIFACTS = Path(
    os.environ.get("COMAL_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts")
)


def chromium() -> str:
    """The browser binary; CI must have it (`.ci/run` installs it), elsewhere a skip."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            raise AssertionError("chromium is not installed: .ci/run installs it")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def console_messages(page: Path, screenshot: Path, size: str = "1280,1800") -> list[str]:
    """Load `page`, save a screenshot, and return what its scripts wrote to the console."""
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            chromium(),
            *CHROMIUM_FLAGS,
            f"--screenshot={screenshot}",
            f"--window-size={size}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert screenshot.exists(), proc.stderr[-2000:]
    return [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


def rendered_dom(page: Path) -> str:
    """The page's DOM after Chromium loaded it and ran its scripts (`--dump-dom`)."""
    proc = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, "--dump-dom", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout
