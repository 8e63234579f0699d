"""Bash permission patterns matched per simple command, with options normalized.

A pattern is written like a command: `rm -rf *`, `git push`, `npm run test:*`, `pytest*`.
It is split like a shell would split it, and both the pattern and each simple command of the
line (see `commands.parse_command`) are normalized the same way:

- the program is compared by basename with shell-style wildcards (`/bin/rm` is `rm`);
- options become a set, wherever they stand and however they are written: `-rf`, `-fr`,
  `-r -f`, `--recursive --force` (for the programs in `_LONG_OPTIONS`) and `-R` are the same;
  `--name=value` is the option `--name`; after `--` everything is an operand;
- operands are compared in order, each with shell-style wildcards.

A pattern ending in ` *` or `:*` (Claude Code's prefix form), or whose last word ends in `*`,
allows anything after what it names. Without it, an allow rule must name the whole command.
Deny and ask rules always match by inclusion: a command matches when it has every option and
the leading operands of the pattern, whatever else it adds (`rm -rf *` covers `rm -rvf x y`).

`match(command, pattern)` answers `MATCH`, `NO_MATCH` or `POSSIBLE` — the last when a part only
known at run time (an expansion, arguments added by xargs, an unknown program) could make it
match. The policy denies on `MATCH` and asks on `POSSIBLE` (headless: denies).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import Enum
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from comal.tools.commands import SimpleCommand


class Match(Enum):
    """How a simple command relates to a pattern."""

    MATCH = "match"
    NO_MATCH = "no-match"
    POSSIBLE = "possible"


_RECURSIVE_FORCE = {"--recursive": "r", "-R": "r", "--force": "f"}
_LONG_OPTIONS: dict[str, dict[str, str]] = {
    "rm": {**_RECURSIVE_FORCE, "--dir": "d", "--verbose": "v", "--interactive": "i"},
    "cp": {**_RECURSIVE_FORCE, "--verbose": "v", "--archive": "a"},
    "mv": {"--force": "f", "--verbose": "v", "--no-clobber": "n"},
    "chmod": {"--recursive": "R", "--verbose": "v"},
    "chown": {"--recursive": "R", "--verbose": "v"},
    "chgrp": {"--recursive": "R", "--verbose": "v"},
    "git": {"--force": "f"},
    "shred": {"--remove": "u", "--force": "f", "--zero": "z"},
}
"""Long options (and upper-case synonyms) of common programs, as their short letter."""

_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "git": frozenset(
        {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--attr-source"}
    ),
    "make": frozenset({"-C", "-f", "--directory", "--file", "--makefile"}),
    "npm": frozenset({"--prefix", "-w", "--workspace"}),
    "kubectl": frozenset({"-n", "--namespace", "--context", "--kubeconfig"}),
    "docker": frozenset({"-H", "--host", "--context", "--config"}),
}
"""Options whose value is the next word, so that `git -C dir push` is still `git push`."""

_WORD_OPTIONS = frozenset({"find"})
"""Programs whose options are whole words after one dash (`find -delete` is not `-d -e -l`)."""


def _long_option(name: str, aliases: dict[str, str], takes_value: frozenset[str]) -> set[str]:
    """A long option as getopt reads it: exact, else every known option it abbreviates.

    `rm --rec --for` is `rm --recursive --force`. An abbreviation of several known options
    stands for all of them (the real program refuses an ambiguous one, so this is only
    stricter); one we know nothing of stays as written.
    """
    if name in aliases:
        return {aliases[name]}
    if name in takes_value:
        return {name}
    found = {letter for long, letter in aliases.items() if long.startswith(name)}
    found |= {long for long in takes_value if long.startswith(name)}
    return found or {name}


@dataclass(frozen=True, slots=True)
class Normalized:
    """Options as a set and operands in order; None marks a value known only at run time."""

    options: frozenset[str]
    operands: tuple[str | None, ...]
    unknown: bool
    """True when some argument is not known statically (it could be any option or operand)."""


def normalize(program: str, args: tuple[str | None, ...], *, open_args: bool = False) -> Normalized:
    """Options and operands of one command, written the same way whatever their spelling."""
    aliases = _LONG_OPTIONS.get(program, {})
    takes_value = _VALUE_OPTIONS.get(program, frozenset())
    options: set[str] = set()
    operands: list[str | None] = []
    unknown = open_args
    only_operands = False
    skip = False
    for arg in args:
        if skip:
            skip = False
            unknown = unknown or arg is None
            continue
        if arg is None:
            unknown = True
            operands.append(None)
        elif only_operands or arg == "-" or not arg.startswith("-"):
            operands.append(arg)
        elif arg == "--":
            only_operands = True
        elif arg in takes_value:
            options.add(aliases.get(arg, arg))
            skip = True
        elif arg.startswith("--") or program in _WORD_OPTIONS:
            name, eq, _ = arg.partition("=")
            found = _long_option(name, aliases, takes_value) if arg.startswith("--") else {name}
            options |= found
            skip = not eq and bool(found & takes_value)
        else:
            for letter in arg[1:]:
                options.add(aliases.get(f"-{letter}", letter).lstrip("-"))
    return Normalized(frozenset(options), tuple(operands), unknown)


@dataclass(frozen=True, slots=True)
class CommandPattern:
    """A parsed Bash pattern."""

    text: str
    program: str
    normalized: Normalized
    rest: bool
    """True when the pattern allows anything after what it names (` *`, `:*`, `word*`)."""

    @classmethod
    def parse(cls, text: str) -> CommandPattern | None:
        """The pattern, or None when it is not a command (it is then matched as text)."""
        try:
            words = shlex.split(text)
        except ValueError:
            return None
        rest = False
        if words and words[-1] == "*":
            words, rest = words[:-1], True
        elif words and words[-1].endswith(":*"):
            words[-1], rest = words[-1][:-2], True
        elif words and words[-1].endswith("*"):
            rest = True
        if not words or not words[0]:
            return None
        program = PurePosixPath(words[0]).name or words[0]
        return cls(text, program, normalize(program, tuple(words[1:])), rest)


def match(command: SimpleCommand, pattern: CommandPattern, *, inclusive: bool) -> Match:
    """Whether `command` is covered by `pattern`.

    Args:
        command: one simple command of a line.
        pattern: the rule's pattern.
        inclusive: deny/ask semantics (extra options and operands still match); allow rules
            use False, where only a `rest` pattern covers more than it names.
    """
    if command.program is None:
        return Match.POSSIBLE
    if not fnmatchcase(command.program, pattern.program):
        return Match.NO_MATCH
    have = normalize(command.program, command.args, open_args=command.open_args)
    want = pattern.normalized
    possible = False
    if not want.options <= have.options:
        if not have.unknown:
            return Match.NO_MATCH
        possible = True
    for index, operand in enumerate(want.operands):
        assert operand is not None  # patterns are literal text
        if index >= len(have.operands):
            if not have.unknown:
                return Match.NO_MATCH
            possible = True
            continue
        value = have.operands[index]
        if value is None:
            if operand != "*":
                possible = True
        elif not fnmatchcase(value, operand):
            return Match.NO_MATCH
    if not inclusive and not pattern.rest:
        extra = have.options - want.options or len(have.operands) > len(want.operands)
        if extra:
            return Match.NO_MATCH
        if have.unknown:
            possible = True
    return Match.POSSIBLE if possible else Match.MATCH


_SUBCOMMAND_PROGRAMS = frozenset(
    {"git", "npm", "pnpm", "yarn", "npx", "cargo", "go", "docker", "podman", "kubectl", "pip",
     "uv", "poetry", "make", "gh", "apt", "apt-get", "brew", "dotnet", "bundle", "rake"}
)  # fmt: skip


def suggest_pattern(command: SimpleCommand) -> str | None:
    """The pattern "always allow" proposes for one command (Claude Code's prefix habit).

    The program, its subcommand for programs that have one (`git status *`, `npm run *`),
    then ` *`; None when the program is not known statically.
    """
    if command.program is None:
        return None
    words = [shlex.quote(command.program)]
    first = next((a for a in command.args if a is None or not a.startswith("-")), None)
    if command.program in _SUBCOMMAND_PROGRAMS and first is not None:
        words.append(shlex.quote(first))
    return " ".join([*words, "*"])
