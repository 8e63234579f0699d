"""Protected paths: the workspace files that change what a later session runs or trusts.

`.comal/` (Comal's settings and custom commands), `.claude/` (Claude Code's settings, hooks and
commands), `.mcp.json` (MCP servers), the instruction files (`AGENTS.md`, `COMAL.md`,
`CLAUDE.md`) and, inside `.git/`, `hooks/` and `config` (run by the next `git` command). The
Bash sandbox mounts them read-only (and holds the place of a missing one so it cannot be
created); the permission policy asks before a native Write or Edit touches one, in every mode
but `full-access`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROTECTED_DIRS = (".comal", ".claude")
"""Folders at the workspace root whose whole content is protected."""
PROTECTED_FILES = (".mcp.json", "AGENTS.md", "COMAL.md", "CLAUDE.md")
"""Files at the workspace root that are protected."""
GIT_DIRS = ("hooks",)
GIT_FILES = ("config",)
"""Inside the workspace's `.git` folder."""


@dataclass(frozen=True, slots=True)
class ProtectedPath:
    """One protected path and whether it is (or would be) a folder."""

    path: Path
    folder: bool


def protected_paths(workspace: Path) -> tuple[ProtectedPath, ...]:
    """Every protected path of `workspace`, whether it exists or not.

    `.git/hooks` and `.git/config` are listed only when `.git` is a folder: a missing `.git`
    is a repository not made yet (`git init` stays possible), and a `.git` file points to a
    folder outside the workspace, which the sandbox leaves read-only anyway.
    """
    found = [ProtectedPath(workspace / name, True) for name in PROTECTED_DIRS]
    found += [ProtectedPath(workspace / name, False) for name in PROTECTED_FILES]
    git = workspace / ".git"
    if git.is_dir() and not git.is_symlink():
        found += [ProtectedPath(git / name, True) for name in GIT_DIRS]
        found += [ProtectedPath(git / name, False) for name in GIT_FILES]
    return tuple(found)


def protected_reason(workspace: Path, resolved: Path) -> str | None:
    """Why a write to `resolved` needs confirmation, or None when it is not protected."""
    root = workspace.resolve()
    names = [*PROTECTED_DIRS, *PROTECTED_FILES, *(f".git/{n}" for n in (*GIT_DIRS, *GIT_FILES))]
    for name in names:
        path = root / name
        if resolved == path or resolved.is_relative_to(path):
            return f"{name} changes what a later session runs or trusts"
    return None
