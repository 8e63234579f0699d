"""Custom slash commands: folders, names, front matter, $ARGUMENTS and $1…; /init's AGENTS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.agent.features.custom_commands import command_folders, expand_command, load_commands
from comal.agent.features.init_file import starter_agents_md, write_agents_md
from comal.errors import ConfigError


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_arguments_front_matter_and_the_closest_folder_wins(tmp_path: Path) -> None:
    ws, cfg, home = tmp_path / "ws", tmp_path / "cfg", tmp_path / "home"
    _write(
        ws / ".comal/commands/fix-issue.md",
        "---\ndescription: Fix an issue\nargument-hint: NUMBER\n---\n"
        "Fix issue #$ARGUMENTS and run the tests.\n",
    )
    _write(ws / ".claude/commands/frontend/lint.md", "Lint $1 then $2.")
    _write(ws / ".claude/commands/review.md", "Review the diff.")
    _write(cfg / "commands/review.md", "user-level review")
    _write(home / ".claude/commands/fix-issue.md", "overridden")
    commands = load_commands(command_folders(ws, cfg, home))

    assert commands["fix-issue"].description == "Fix an issue"
    assert commands["fix-issue"].argument_hint == "NUMBER"
    assert expand_command("/fix-issue 123", commands) == "Fix issue #123 and run the tests."
    assert expand_command('/frontend:lint "src/a b.ts" fast', commands) == (
        "Lint src/a b.ts then fast."
    )
    assert expand_command("/review", commands) == "Review the diff."  # workspace over user
    assert expand_command("/review look at auth", commands) == "Review the diff.\n\nlook at auth"
    assert expand_command("/unknown x", commands) is None
    assert expand_command("//fix-issue 1", commands) is None
    assert expand_command("plain text", commands) is None


def test_init_writes_a_starter_from_the_workspace_and_never_overwrites(tmp_path: Path) -> None:
    ws = tmp_path / "proj"
    _write(ws / "Makefile", ".PHONY: test\ntest:\n\tpytest\nlint:\n\truff check .\n")
    _write(ws / "pyproject.toml", "[project]\nname='x'\n[tool.pytest.ini_options]\n")
    _write(ws / "src/x/__init__.py", "")
    text = starter_agents_md(ws)
    assert text.startswith("# proj\n")
    assert "- Python (pyproject.toml)" in text
    assert "- `make test`" in text
    assert "- `make lint`" in text
    assert "- `pytest`" in text
    assert "- `src/`" in text
    path = write_agents_md(ws)
    assert path.read_text() == text
    path.write_text("mine")
    with pytest.raises(ConfigError, match="already exists"):
        write_agents_md(ws)
    assert path.read_text() == "mine"
