"""Custom slash commands: Markdown prompts in command folders, expanded before they are sent.

Where they come from, later folders winning on the same name (the closest has the final word):
`~/.claude/commands/`, the user config dir's `commands/`, then the workspace's
`.claude/commands/` and `.comal/commands/`. A file `fix-issue.md` is the command `/fix-issue`;
a file in a subfolder `frontend/lint.md` is `/frontend:lint`, as Claude Code names them.

A file may start with front matter between `---` lines (`description:`, `argument-hint:`; other
keys are kept and ignored). In the body, `$ARGUMENTS` becomes everything typed after the name,
and `$1` … `$9` the words of it; a body with neither gets the arguments appended on a line of
their own, so nothing the user typed is lost.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from comal.errors import ConfigError

_POSITIONAL = re.compile(r"\$([1-9])")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """One command file."""

    name: str
    path: Path
    body: str
    description: str = ""
    argument_hint: str = ""

    def expand(self, arguments: str) -> str:
        """The prompt this command sends for `arguments`."""
        try:
            words = shlex.split(arguments)
        except ValueError:
            words = arguments.split()
        uses_arguments = "$ARGUMENTS" in self.body or _POSITIONAL.search(self.body)
        text = self.body.replace("$ARGUMENTS", arguments)
        text = _POSITIONAL.sub(
            lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", text
        )
        if arguments and not uses_arguments:
            text = f"{text.rstrip()}\n\n{arguments}"
        return text.strip()


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """(keys, body) of a Markdown file with optional `---` front matter."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            keys = {}
            for line in lines[1:index]:
                key, sep, value = line.partition(":")
                if sep:
                    keys[key.strip().lower()] = value.strip().strip("\"'")
            return keys, "".join(lines[index + 1 :])
    return {}, text


def command_folders(workspace: Path, config_dir: Path, home: Path) -> list[Path]:
    """The folders read, in order (later ones win)."""
    return [
        home / ".claude" / "commands",
        config_dir / "commands",
        workspace / ".claude" / "commands",
        workspace / ".comal" / "commands",
    ]


def load_commands(folders: list[Path]) -> dict[str, CustomCommand]:
    """Every command in `folders`, by name (without the slash).

    Raises:
        ConfigError: a command file that cannot be read.
    """
    found: dict[str, CustomCommand] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.md")):
            relative = path.relative_to(folder).with_suffix("")
            name = ":".join(relative.parts)
            if not _NAME.match(name):
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise ConfigError(f"cannot read command {path}: {exc.strerror or exc}") from exc
            keys, body = _front_matter(text)
            found[name] = CustomCommand(
                name,
                path,
                body,
                keys.get("description", ""),
                keys.get("argument-hint", ""),
            )
    return found


def expand_command(text: str, commands: Mapping[str, CustomCommand]) -> str | None:
    """The prompt for `/name arguments` when `name` is a custom command, else None."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    head, _, rest = text[1:].partition(" ")
    command = commands.get(head.strip())
    return None if command is None else command.expand(rest.strip())
