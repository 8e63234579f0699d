"""`/init`: a starter AGENTS.md written from what the workspace shows, with no model call.

It names the project's build and test files it finds, the commands they declare (Makefile
targets, package.json scripts, pyproject tools), and the top-level layout, leaving the rest
for people to write. An existing AGENTS.md is never overwritten.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from comal.errors import ConfigError

MARKERS = {
    "pyproject.toml": "Python (pyproject.toml)",
    "setup.py": "Python (setup.py)",
    "package.json": "JavaScript/TypeScript (package.json)",
    "Cargo.toml": "Rust (Cargo.toml)",
    "go.mod": "Go (go.mod)",
    "pom.xml": "Java (Maven)",
    "build.gradle": "Java/Kotlin (Gradle)",
    "CMakeLists.txt": "C/C++ (CMake)",
    "Gemfile": "Ruby (Gemfile)",
}
SKIPPED = {".git", "node_modules", ".venv", "venv", "__pycache__", "target", "dist", "build"}
LISTED = 30


def _make_targets(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [m for m in re.findall(r"^([A-Za-z][\w.-]*):(?!=)", text, re.M) if m != "PHONY"]


def _scripts(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError:
        return []
    scripts = data.get("scripts") if isinstance(data, dict) else None
    return sorted(scripts) if isinstance(scripts, dict) else []


def starter_agents_md(workspace: Path) -> str:
    """The text of a starter AGENTS.md for `workspace`."""
    found = [label for name, label in MARKERS.items() if (workspace / name).exists()]
    lines = [f"# {workspace.name}", "", "Notes for coding agents working in this repository.", ""]
    lines += ["## Stack", *(f"- {label}" for label in found or ["(not detected)"]), ""]
    commands: list[str] = []
    if (workspace / "Makefile").is_file():
        commands += [f"- `make {t}`" for t in _make_targets(workspace / "Makefile")[:12]]
    if (workspace / "package.json").is_file():
        commands += [f"- `npm run {s}`" for s in _scripts(workspace / "package.json")[:12]]
    if (workspace / "pyproject.toml").is_file():
        text = (workspace / "pyproject.toml").read_text(encoding="utf-8", errors="replace")
        for tool, command in (("pytest", "pytest"), ("ruff", "ruff check ."), ("mypy", "mypy")):
            if f"[tool.{tool}" in text:
                commands.append(f"- `{command}`")
    lines += ["## Commands", *(commands or ["- (add the build and test commands here)"]), ""]
    entries = sorted(
        p for p in workspace.iterdir() if p.name not in SKIPPED and not p.name.startswith(".")
    )
    layout = [f"- `{p.name}{'/' if p.is_dir() else ''}`" for p in entries[:LISTED]]
    if len(entries) > LISTED:
        layout.append(f"- … {len(entries) - LISTED} more")
    lines += ["## Layout", *(layout or ["- (empty)"]), ""]
    lines += ["## Conventions", "- (style rules, review rules, things to never do)", ""]
    return "\n".join(lines)


def write_agents_md(workspace: Path) -> Path:
    """Write the starter AGENTS.md and return its path.

    Raises:
        ConfigError: AGENTS.md already exists (it is left as it is) or cannot be written.
    """
    path = workspace / "AGENTS.md"
    if path.exists():
        raise ConfigError(f"{path} already exists; it was left as it is")
    try:
        path.write_text(starter_agents_md(workspace), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path
