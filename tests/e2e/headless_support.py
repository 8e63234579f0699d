"""Running `python -m comal` as a real subprocess against the loopback fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from comal.config_trust import project_files, trust
from comal.ledger.store import Ledger
from comal.testing.fake_server import FakeServer
from tests.cli_support import run_cli

WIRES = ("openai-chat", "openai-responses", "anthropic-messages")
COMAL = (sys.executable, "-m", "comal")
"""The command that runs Comal."""


@dataclass(frozen=True, slots=True)
class Run:
    """A finished CLI run."""

    code: int
    stdout: str
    stderr: str

    def events(self) -> list[dict[str, object]]:
        """stream-json events printed on stdout."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]

    def session_id(self) -> str:
        """The session id announced by the run."""
        for event in self.events():
            if event.get("type") == "session_opened":
                return str(event["session_id"])
        raise AssertionError(f"no session_opened event in:\n{self.stdout}\n{self.stderr}")


def configure(workspace: Path, server: FakeServer, wire: str, **extra: object) -> None:
    """Write `.comal/config.toml` pointing the workspace at the fake server."""
    base = server.base_url if wire == "anthropic-messages" else server.openai_base_url
    lines = [
        'default_provider = "fake"',
        "",
        "[providers.fake]",
        f'wire = "{wire}"',
        f'base_url = "{base}"',
        'model = "fake-model"',
        "max_retries = 2",
    ]
    lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text("\n".join(lines) + "\n")


def trust_project(workspace: Path, env_home: Path) -> None:
    """Trust the workspace's hooks and MCP servers as they are now, as `comal trust --yes`
    does, in the user config a run under `env_home` reads."""
    trust(env_home / "xdg-config" / "comal", project_files(workspace))


def comal_env(env_home: Path) -> dict[str, str]:
    """The environment of a Comal subprocess: no provider or Comal settings of the machine, its
    ledger and user config under `env_home`."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "COMAL_"))
    }
    env["COMAL_HOME"] = str(env_home)
    env["XDG_CONFIG_HOME"] = str(env_home / "xdg-config")
    return env


def start(
    *args: str, cwd: Path, env_home: Path, stderr: int = subprocess.PIPE
) -> subprocess.Popen[bytes]:
    """Start `python -m comal ARGS` in `cwd` (stdin empty, stdout dropped), for a test that
    watches or kills it while it runs."""
    return subprocess.Popen(
        [*COMAL, *args],
        cwd=cwd,
        env=comal_env(env_home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )


def comal(
    *args: str,
    cwd: Path,
    env_home: Path,
    stdin: str | None = None,
    timeout: float = 60,
    extra_env: Mapping[str, str] | None = None,
    program: Sequence[str] = COMAL,
) -> Run:
    """Run `python -m comal ARGS` (or `PROGRAM ARGS`) in `cwd` with its ledger under `env_home`
    (`comal_env`, plus `extra_env`)."""
    proc = subprocess.run(
        [*program, *args],
        cwd=cwd,
        env=comal_env(env_home) | dict(extra_env or {}),
        input=stdin,
        # A task given as an argument still reads piped stdin; never inherit the test's own.
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def comal_here(
    *args: str,
    cwd: Path,
    env_home: Path,
    stdin: str | None = None,
    timeout: float = 60,
    extra_env: Mapping[str, str] | None = None,
) -> Run:
    """`comal ARGS` as `comal` runs it, but in this process (`tests/cli_support.py`): for tests
    that only check what a command prints, records and returns. Same environment as `comal`
    (`comal_env`), same working directory; restored afterwards."""
    env = comal_env(env_home) | dict(extra_env or {})
    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        done = run_cli(*args, stdin=stdin or "")
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return Run(done.returncode, done.stdout, done.stderr)


def ledger_at(env_home: Path) -> Ledger:
    """Open the ledger a run wrote."""
    return Ledger.open(env_home / "ledger.db")
