"""Custom instructions: AGENTS.md, COMAL.md and CLAUDE.md, loaded as their own prompt part.

Where they come from, in this order (general first, most specific last, so the closest file
has the final word):

1. the user config dir (`Config.config_dir`);
2. every directory from the repository root (the nearest ancestor holding `.git`) down to the
   workspace; without a repository, the workspace alone.

Within a directory the names are read in the order AGENTS.md, COMAL.md, CLAUDE.md. A file
reached twice (the config dir inside the workspace, a CLAUDE.md symlinked to AGENTS.md) or with
the same content as one already loaded is taken once; empty files are skipped. Each file is
wrapped in a tag naming its absolute path, so the model knows where a rule comes from and the
budget can count the whole part separately. Loading is deterministic: the same files give the
same text byte for byte. Undecodable bytes become U+FFFD; an unreadable file is listed in
`problems` instead of failing the session.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "COMAL.md", "CLAUDE.md")


@dataclass(frozen=True, slots=True)
class Instructions:
    """The custom-instructions part of the prompt."""

    text: str
    """All files, each wrapped in `<instructions source="PATH">…</instructions>`; "" if none."""
    sources: tuple[str, ...]
    """Absolute paths of the files included, in order."""
    problems: tuple[str, ...] = ()
    """Files that exist but could not be read, each with the reason (for a warning)."""


def _repository_chain(workspace: Path) -> list[Path]:
    """Directories from the repository root down to the workspace (the workspace alone if none)."""
    chain = [workspace, *workspace.parents]
    for index, directory in enumerate(chain):
        if (directory / ".git").exists():
            return list(reversed(chain[: index + 1]))
    return [workspace]


def load_instructions(workspace: Path, config_dir: Path) -> Instructions:
    """Load the custom instructions that apply to `workspace`.

    Args:
        workspace: the session's workspace directory.
        config_dir: the user config dir (`Config.config_dir`); it may not exist.

    Returns:
        The combined text and the list of files it came from.
    """
    workspace = workspace.resolve()
    directories = [config_dir.resolve(), *_repository_chain(workspace)]
    seen_paths: set[Path] = set()
    seen_digests: set[str] = set()
    blocks: list[str] = []
    sources: list[str] = []
    problems: list[str] = []
    for directory in directories:
        for name in INSTRUCTION_FILES:
            path = directory / name
            if not path.is_file():
                continue
            real = path.resolve()
            if real in seen_paths:
                continue
            seen_paths.add(real)
            try:
                data = path.read_bytes()
            except OSError as exc:
                problems.append(f"{path}: cannot read: {exc.strerror or exc}")
                continue
            digest = hashlib.sha256(data).hexdigest()
            text = data.decode("utf-8", errors="replace").strip()
            if not text or digest in seen_digests:
                continue
            seen_digests.add(digest)
            blocks.append(f'<instructions source="{path}">\n{text}\n</instructions>')
            sources.append(str(path))
    return Instructions("\n\n".join(blocks), tuple(sources), tuple(problems))
