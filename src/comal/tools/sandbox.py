"""The Bash sandbox: bubblewrap around `bash -c` in `workspace-write` and `read-only` modes.

Inside, the whole filesystem is mounted read-only except the workspace (read-only too in
`read-only` mode), a private empty /tmp and the configured `[sandbox] writable` paths; the
network is a namespace of its own with only loopback (unless `[sandbox] network = true`).
The workspace's own `.comal/` stays read-only, so a command cannot rewrite the permissions or
the sandbox settings the next session will load.

Invariants:
- bwrap runs in the group Bash started (no `--new-session`), so killing the group still ends
  every process of the command; `--die-with-parent` ends the command if bwrap itself dies.
- Whether bwrap works is probed once per process (`probe()`): it may be missing, or the
  kernel may refuse namespaces (containers, hardened kernels). The caller says so once and
  either runs Bash unconfined or, with `[sandbox] required = true`, refuses to run it.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from comal.config import SandboxConfig

_PROBE_TIMEOUT_S = 10.0


@cache
def probe(bwrap: str = "bwrap") -> str | None:
    """None when bubblewrap can confine a command here, else why not (probed once)."""
    found = shutil.which(bwrap)
    if found is None:
        return f"{bwrap} (bubblewrap) is not installed"
    argv = [found, *_base_args(network=False), "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} cannot start: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        return f"{bwrap} cannot create namespaces: {detail}"
    return None


def _base_args(*, network: bool) -> list[str]:
    args = [
        "--die-with-parent",
        "--unshare-user-try",
        "--unshare-ipc",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--tmpfs", "/tmp",
    ]  # fmt: skip
    if not network:
        args.append("--unshare-net")
    return args


@dataclass(frozen=True, slots=True)
class Sandbox:
    """How one session's Bash commands are confined.

    Args:
        workspace: the session's workspace (writable unless `workspace_writable` is False).
        config: `[sandbox]` settings.
        workspace_writable: False in `read-only` mode.
        unavailable: why bubblewrap cannot be used here (None when it can).
    """

    workspace: Path
    config: SandboxConfig
    workspace_writable: bool = True
    unavailable: str | None = None

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` run inside bubblewrap."""
        # Bound even when read-only: a workspace under /tmp would be hidden by the private /tmp.
        bind = "--bind" if self.workspace_writable else "--ro-bind"
        binds = [bind, str(self.workspace), str(self.workspace)]
        settings = self.workspace / ".comal"
        if self.workspace_writable and settings.is_dir():
            binds += ["--ro-bind", str(settings), str(settings)]
        for raw in self.config.writable:
            path = str(Path(raw).expanduser().resolve())
            binds += ["--bind-try", path, path]
        return [
            "bwrap",
            *_base_args(network=self.config.network),
            *binds,
            "--chdir", str(self.workspace),
            "--",
            *argv,
        ]  # fmt: skip


def session_sandbox(mode: str, workspace: Path, config: SandboxConfig) -> Sandbox | None:
    """The sandbox for a permission mode: None in `full-access` (Bash runs unconfined)."""
    if mode == "full-access":
        return None
    return Sandbox(
        workspace.resolve(), config, workspace_writable=mode != "read-only", unavailable=probe()
    )
