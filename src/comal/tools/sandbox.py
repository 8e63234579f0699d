"""The Bash sandbox: bubblewrap around `bash -c` in `workspace-write` and `read-only` modes.

Inside, the whole filesystem is mounted read-only except the workspace (read-only too in
`read-only` mode), a private empty /tmp and the configured `[sandbox] writable` paths; the
network is a namespace of its own with only loopback (unless `[sandbox] network = true`).
The workspace's protected paths (`tools/protected.py`: `.comal/`, `.claude/`, `.mcp.json`,
the instruction files, `.git/hooks` and `.git/config`) stay read-only, so a command cannot
rewrite what the next session loads and runs. A protected path that does not exist is held
by an empty read-only folder for the length of the call (created on the host, where the
mount needs a place, and removed after the last call that used it): it cannot be created.

Invariants:
- The command runs in a PID namespace of its own (`--unshare-pid`, with its own /proc): it
  sees and can signal only its own processes, and when the shell exits bubblewrap's init ends
  every process left in the namespace (`setsid … &` included), so nothing outlives the call.
- bwrap runs in the group Bash started (no `--new-session`), so killing the group still ends
  every process of the command; `--die-with-parent` ends the command if Comal dies.
- Whether bwrap works is probed once per process (`probe()`): it may be missing, or the
  kernel may refuse namespaces (containers, hardened kernels). The caller says so once and
  either runs Bash unconfined or, with `[sandbox] required = true`, refuses to run it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from comal.config import SandboxConfig
from comal.tools.protected import protected_paths

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
        "--unshare-pid",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
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
        """`argv` run inside bubblewrap (call it inside `confined()`, which holds the places
        of missing protected paths)."""
        # Bound even when read-only: a workspace under /tmp would be hidden by the private /tmp.
        bind = "--bind" if self.workspace_writable else "--ro-bind"
        binds = [bind, str(self.workspace), str(self.workspace)]
        for raw in self.config.writable:
            path = str(Path(raw).expanduser().resolve())
            binds += ["--bind-try", path, path]
        if self.workspace_writable:
            # Last, so a writable path cannot uncover one.
            for protected in protected_paths(self.workspace):
                if protected.path.exists() or _hold_place(protected.path):
                    binds += ["--ro-bind", str(protected.path), str(protected.path)]
        return [
            "bwrap",
            *_base_args(network=self.config.network),
            *binds,
            "--chdir", str(self.workspace),
            "--",
            *argv,
        ]  # fmt: skip

    @contextlib.contextmanager
    def confined(self) -> Iterator[None]:
        """The span of one sandboxed call: afterwards, when no other call (of this or another
        Comal process) is running in the workspace, the place holders are removed."""
        try:
            fd = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            yield
            return
        try:
            _share(fd)
            yield
        finally:
            try:
                if _last(fd):
                    _remove_places(self.workspace)
            finally:
                os.close(fd)


def _share(fd: int) -> None:
    """Take the shared lock of a running call. An exclusive one is only held for the moment a
    call's end removes the place holders (a command cannot hold it: its own call holds the
    shared one), so a short wait is enough; past it the call runs all the same."""
    for _ in range(_LOCK_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(_LOCK_WAIT_S)
        except OSError:
            return
        else:
            return


def _last(fd: int) -> bool:
    """Whether no other call runs in the workspace (the exclusive lock is taken)."""
    for _ in range(2):  # two calls ending at once: after letting go, one of them gets it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            return False
        else:
            return True
    return False


_LOCK_TRIES = 200
_LOCK_WAIT_S = 0.005
_HELD: set[Path] = set()
"""Place holders this process made for missing protected folders (`.claude`, `.git/hooks`);
an empty folder at a protected *file* name is always a place holder."""


def _hold_place(path: Path) -> bool:
    """Create an empty folder where a missing protected path would go; True when it is there."""
    try:
        path.mkdir(mode=0o755)
    except FileExistsError:
        return path.exists()
    except OSError:
        return False
    _HELD.add(path)
    return True


def _remove_places(workspace: Path) -> None:
    for protected in protected_paths(workspace):
        path = protected.path
        if protected.folder and path not in _HELD:
            continue
        if path.is_dir() and not path.is_symlink():
            with contextlib.suppress(OSError):
                path.rmdir()  # only an empty one: anything written there stays
        _HELD.discard(path)


def session_sandbox(mode: str, workspace: Path, config: SandboxConfig) -> Sandbox | None:
    """The sandbox for a permission mode: None in `full-access` (Bash runs unconfined)."""
    if mode == "full-access":
        return None
    return Sandbox(
        workspace.resolve(), config, workspace_writable=mode != "read-only", unavailable=probe()
    )
