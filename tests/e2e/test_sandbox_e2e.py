"""The Bash sandbox through `comal -p`: confined in workspace-write, unconfined in full-access,
and a missing bubblewrap said once (or Bash refused with `[sandbox] required = true`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import comal, configure, ledger_at
from tests.sandbox_support import NEEDS_BUBBLEWRAP

pytestmark = [pytest.mark.e2e, NEEDS_BUBBLEWRAP]


def run_bash(
    tmp_path: Path,
    command: str,
    *args: str,
    config: str = "",
    path_env: str | None = None,
) -> tuple[int, list[dict[str, object]], dict[str, object]]:
    """`comal -p` whose scripted model runs one Bash call; (exit code, events, its result)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    home = tmp_path / "home"
    call = {"id": "c1", "name": "Bash", "arguments": {"command": command}}
    with FakeServer([{"tool_calls": [call]}, "Done."]) as server:
        configure(workspace, server, "openai-chat")
        with (workspace / ".comal" / "config.toml").open("a") as fh:
            fh.write(config)
        run = comal(
            "-p",
            "go",
            "--output-format",
            "stream-json",
            *args,
            cwd=workspace,
            env_home=home,
            timeout=120,
            extra_env=None if path_env is None else {"PATH": path_env},
        )
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        (result,) = ledger.entries(info.id, kinds=("tool.result",))
        body = ledger.body(result) or b""
    return run.code, run.events(), {**result.payload, "output": body.decode()}


def test_workspace_write_confines_bash_and_full_access_does_not(
    tmp_path: Path, outside: Path
) -> None:
    code, _, result = run_bash(tmp_path / "a", f"touch {outside}/confined")
    assert code == 0
    assert result["exit_code"] != 0
    assert "Read-only file system" in str(result["output"])
    assert not (outside / "confined").exists()
    code, _, result = run_bash(
        tmp_path / "b", f"touch {outside}/free", "--permission-mode", "full-access"
    )
    assert (code, result["exit_code"]) == (0, 0)
    assert (outside / "free").exists()


def bash_only_path(tmp_path: Path) -> str:
    """A PATH where bash and coreutils are found but bwrap is not."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "touch", "cat"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_a_missing_bubblewrap_is_said_once_and_bash_runs_unconfined(tmp_path: Path) -> None:
    code, events, result = run_bash(tmp_path, "touch ran", path_env=bash_only_path(tmp_path))
    assert code == 0
    notices = [e for e in events if e.get("code") == "SANDBOX_UNAVAILABLE"]
    assert len(notices) == 1
    assert "bwrap (bubblewrap) is not installed" in str(notices[0]["message"])
    assert result["exit_code"] == 0
    assert (tmp_path / "ws" / "ran").exists()


def test_a_required_sandbox_refuses_bash_without_bubblewrap(tmp_path: Path) -> None:
    code, events, result = run_bash(
        tmp_path,
        "touch ran",
        config="\n[sandbox]\nrequired = true\n",
        path_env=bash_only_path(tmp_path),
    )
    assert code == 0
    assert any(e.get("code") == "SANDBOX_UNAVAILABLE" for e in events)
    assert result["status"] == "error"
    assert "[sandbox] required = true" in str(result["output"])
    assert not (tmp_path / "ws" / "ran").exists()
