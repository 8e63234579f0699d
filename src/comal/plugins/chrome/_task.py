"""The governed task's process facts: where its server and browser run, which tab is governed.

These are the plugin's own notes (a JSON file under its state directory, one per workspace),
not the truth about what happened: that is the ledger's intents and results, checked against
fresh observations. The notes let a later process find the server and browser to observe, and
close them at ChromeFinish.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from comal.errors import ToolError
from comal.messages import canonical_json
from comal.plugins.chrome._browser import digest


@dataclass(slots=True)
class TaskNotes:
    """Where the governed task's pieces run (None: not started)."""

    folder: str | None = None
    server_port: int | None = None
    cdp_port: int | None = None
    tab_url: str | None = None
    target: str = "loopback"


class TaskStore:
    """Reads and writes the notes of one workspace's governed task.

    Args:
        state_dir: the plugin's state directory.
        workspace: the workspace the task belongs to.
    """

    def __init__(self, state_dir: Path, workspace: Path) -> None:
        key = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
        self.root = state_dir / key
        self.path = self.root / "task.json"

    def pid_file(self, what: str, port: int) -> Path:
        """The pid file of the server or browser on `port`."""
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / f"{what}-{port}.pid"

    @property
    def deploy_log(self) -> Path:
        """One line per server start: how deploys are counted."""
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / "deploys.jsonl"

    def profile(self, port: int) -> Path:
        """A fresh browser profile for the browser on `port`."""
        return self.root / f"profile-{port}"

    def load(self) -> TaskNotes:
        """The notes, or empty ones."""
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return TaskNotes()
        if not isinstance(raw, dict):
            return TaskNotes()
        known = set(TaskNotes.__dataclass_fields__)
        return TaskNotes(**{k: v for k, v in raw.items() if k in known})

    def save(self, notes: TaskNotes) -> None:
        """Write the notes atomically."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(notes)), encoding="utf-8")
        tmp.replace(self.path)

    def stop(self, what: str, port: int | None) -> bool:
        """Kill the recorded process of the server or browser on `port`; True if one was."""
        if port is None:
            return False
        pid_file = self.pid_file(what, port)
        try:
            pid = int(pid_file.read_text(encoding="ascii"))
        except (OSError, ValueError):
            return False
        pid_file.unlink(missing_ok=True)
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            _reap(pid, 0)
            return False
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and not _reap(pid, STOP_POLL_S):
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        _reap(pid, 0)
        return True


STOP_GRACE_S = 5.0
STOP_POLL_S = 0.05


def _reap(pid: int, wait_s: float) -> bool:
    """Reap `pid` if this process started it; True once it is gone (or not our child)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        # Not our child (a later process): gone once it no longer answers signal 0.
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        time.sleep(wait_s)
        return False
    if done == 0:
        time.sleep(wait_s)
        return False
    return True


def manifest(folder: Path) -> dict[str, str]:
    """Digest of every file under `folder` (relative POSIX paths, sorted; dotfiles left out).

    Raises:
        ToolError: the folder does not exist or holds no file.
    """
    if not folder.is_dir():
        raise ToolError(f"{folder} is not a directory")
    files: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            files[rel.as_posix()] = digest(path.read_bytes())
    if not files:
        raise ToolError(f"{folder} holds no file to publish")
    return files


def manifest_digest(files: dict[str, str]) -> str:
    """One digest for a whole manifest."""
    return digest(canonical_json(dict(files)).encode("ascii"))
