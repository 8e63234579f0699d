"""Without bubblewrap and with `[sandbox] required = false`, Bash runs unconfined: `comal doctor`
says so on its first line, and so does the first line of every session, headless included."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal, configure

pytestmark = pytest.mark.e2e

MISSING = "bwrap (bubblewrap) is not installed"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def no_bwrap(tmp_path: Path) -> dict[str, str]:
    """A PATH with bash but no bwrap (Comal itself runs from the test's interpreter)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (bin_dir / "bash").symlink_to(bash)
    return {"PATH": str(bin_dir)}


def test_doctor_says_bash_runs_unconfined(
    workspace: Path, home: Path, no_bwrap: dict[str, str]
) -> None:
    with FakeServer([]) as server:
        configure(workspace, server, "openai-chat")
        run = comal("doctor", cwd=workspace, env_home=home, extra_env=no_bwrap)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stdout.splitlines()[0] == (
        f"BAD sandbox: {MISSING}; [sandbox] required = false, so Bash runs UNCONFINED (install"
        " bubblewrap, or set required = true to refuse Bash instead)"
    )


def test_every_session_says_so_on_its_first_line(
    workspace: Path, home: Path, no_bwrap: dict[str, str]
) -> None:
    with FakeServer(["first answer", "second answer"]) as server:
        configure(workspace, server, "openai-chat")
        first = comal("-p", "hello", cwd=workspace, env_home=home, extra_env=no_bwrap)
        again = comal("--continue", "-p", "more", cwd=workspace, env_home=home, extra_env=no_bwrap)
    for run, verb in ((first, "started"), (again, "resumed")):
        assert run.code == 0, run.stderr
        opening = run.stderr.splitlines()[0]
        assert opening.startswith("● session ")
        assert f" {verb} (" in opening
        assert opening.endswith(f" · ⚠ no sandbox: {MISSING}; Bash runs unconfined")
        assert run.stderr.count("no sandbox") == 1  # said once, on the first line


def test_with_bubblewrap_nothing_is_said(workspace: Path, home: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is required for this suite (.ci/run installs it)")
    with FakeServer(["an answer"]) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "hello", cwd=workspace, env_home=home)
        doctor = comal("doctor", cwd=workspace, env_home=home)
    assert run.code == 0, run.stderr
    assert "sandbox" not in run.stderr
    assert (
        doctor.stdout.splitlines()[0] == "ok  sandbox: bubblewrap confines Bash (workspace-write)"
    )
