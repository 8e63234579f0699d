"""Trusting a project's own configuration before its hooks and MCP servers run.

A workspace file that names commands Comal would run outside the sandbox — hooks in
`.comal/config.toml` or `.claude/settings*.json`, MCP servers in `.comal/config.toml` or
`.mcp.json` — could have been written by anyone who wrote the repository (or by an earlier
session). Such a file runs nothing until the user has seen it and trusted it; the trust is its
content digest, recorded in the user's own configuration folder
(`$XDG_CONFIG_HOME/comal/trusted-projects.json`), never in the workspace. A file that changed
since is untrusted again.

Invariants: reading the trust never fails a session (an unreadable record trusts nothing);
recording it replaces the record atomically, readable by its owner only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

TRUST_FILE = "trusted-projects.json"


@dataclass(frozen=True, slots=True)
class ProjectFile:
    """A workspace file that would make Comal run commands."""

    path: Path
    digest: str
    """`sha256:<hex>` of its bytes."""
    runs: str
    """What it would run: `hooks`, `MCP servers` or both."""


def _runs(path: Path, data: bytes) -> str:
    """What `data` (the content of `path`) configures to run; "" when nothing."""
    found: list[str] = []
    try:
        if path.suffix == ".toml":
            table: object = tomllib.loads(data.decode("utf-8"))
        else:
            table = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        # The loader reports a broken file; trusting nothing is still right here.
        return "hooks or MCP servers"
    if not isinstance(table, Mapping):
        return ""
    if table.get("hooks"):
        found.append("hooks")
    if table.get("mcp_servers") or table.get("mcpServers"):
        found.append("MCP servers")
    return " and ".join(found)


def project_files(workspace: Path) -> tuple[ProjectFile, ...]:
    """The workspace's files that configure hooks or MCP servers, with their digests."""
    found = []
    for path in (
        workspace / ".comal" / "config.toml",
        workspace / ".claude" / "settings.json",
        workspace / ".claude" / "settings.local.json",
        workspace / ".mcp.json",
    ):
        try:
            data = path.read_bytes() if path.is_file() else None
        except OSError:
            data = None
        if data is None:
            continue
        runs = _runs(path, data)
        if runs:
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            found.append(ProjectFile(path, digest, runs))
    return tuple(found)


def _record(config_dir: Path) -> dict[str, str]:
    try:
        raw = json.loads((config_dir / TRUST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items()}


def untrusted_files(workspace: Path, config_dir: Path) -> tuple[ProjectFile, ...]:
    """The project files whose current content the user has not trusted."""
    trusted = _record(config_dir)
    return tuple(f for f in project_files(workspace) if trusted.get(str(f.path)) != f.digest)


def trust(config_dir: Path, files: Iterable[ProjectFile]) -> Path:
    """Record `files` (their current digests) as trusted; returns the record's path."""
    record = _record(config_dir)
    record.update({str(f.path): f.digest for f in files})
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / TRUST_FILE
    tmp = config_dir / f".{TRUST_FILE}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=2, sort_keys=True)
            fh.write("\n")
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def untrusted_warning(file: ProjectFile) -> str:
    """The warning a session starts with while `file` is not trusted."""
    return (
        f"{file.path} configures {file.runs} and is new or changed since it was last "
        f"trusted: its {file.runs} do not run. Review it with `comal trust`"
    )
