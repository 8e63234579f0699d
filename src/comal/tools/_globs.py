"""Glob patterns and the file walk shared by Glob and Grep's Python fallback.

Invariants:
- `glob_regex` is a pure translation: `*` and `?` never cross `/`, `**` spans directories,
  `[...]`/`[!...]` are classes and `{a,b}` alternatives.
- `walk_files` is deterministic: entries are visited sorted by name within each directory
  (the order `rg --sort path` uses), `.git` is never entered, symlinked directories are never
  followed (no cycles, no escape from the root), and `.gitignore` files found during the walk
  are honoured with the usual rules (last match wins, `!` re-includes, a trailing `/` means
  directories only, a pattern containing `/` is anchored to its `.gitignore`'s directory).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/") and i + 2 == n:
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern.startswith("[!", i) else i + 1)
            if end == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        elif ch == "{":
            end = pattern.find("}", i)
            if end == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                options = pattern[i + 1 : end].split(",")
                out.append("(?:" + "|".join(_translate(opt) for opt in options) + ")")
                i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob pattern to a regex matching whole `/`-separated relative paths."""
    return re.compile(r"\A" + _translate(pattern) + r"\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class GitignoreRule:
    """One line of a `.gitignore`, located at `base` (a relative directory, "" for root)."""

    base: str
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether the rule matches the root-relative path `rel`."""
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        return self.regex.match(rel) is not None


def parse_gitignore(text: str, base: str) -> list[GitignoreRule]:
    """The rules of one `.gitignore` whose directory is `base` (relative to the walk root)."""
    rules: list[GitignoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        line = line.removeprefix("\\")
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = re.compile(r"\A" + ("" if anchored else "(?:.*/)?") + body + r"\Z", re.DOTALL)
        rules.append(GitignoreRule(base, regex, negate, dir_only))
    return rules


def ignored(rules: list[GitignoreRule], rel: str, is_dir: bool) -> bool:
    """Whether `rel` is ignored: the last matching rule decides."""
    verdict = False
    for rule in rules:
        if rule.matches(rel, is_dir):
            verdict = not rule.negate
    return verdict


def walk_files(
    root: Path, *, respect_gitignore: bool = True, include_symlinks: bool = True
) -> Iterator[str]:
    """Yield files under `root` as `/`-separated paths relative to it, in walk order.

    Args:
        root: the directory to walk.
        respect_gitignore: skip what `.gitignore` files under `root` exclude.
        include_symlinks: yield symlinks that are not directories (never followed into).
    """
    yield from _walk(root, "", [], respect_gitignore, include_symlinks)


def _walk(
    directory: Path, rel: str, rules: list[GitignoreRule], respect: bool, symlinks: bool
) -> Iterator[str]:
    if respect:
        gitignore = directory / ".gitignore"
        if gitignore.is_file():
            try:
                text = gitignore.read_text("utf-8", errors="replace")
            except OSError:
                text = ""
            rules = rules + parse_gitignore(text, rel)
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        child = f"{rel}/{entry.name}" if rel else entry.name
        is_link = entry.is_symlink()
        is_dir = entry.is_dir(follow_symlinks=False)
        if is_dir and entry.name == ".git":
            continue
        if respect and ignored(rules, child, is_dir):
            continue
        if is_dir:
            yield from _walk(Path(entry.path), child, rules, respect, symlinks)
        elif is_link:
            if symlinks and not entry.is_dir(follow_symlinks=True):
                yield child
        else:
            yield child
