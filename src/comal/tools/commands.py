"""Bash command lines as the simple commands they run, resolved statically with tree-sitter-bash.

`parse_command(line)` walks the whole syntax tree — lists, pipelines, subshells, `{ }` groups,
loops, functions, redirections, here-documents, and the insides of `$(…)`, `` `…` `` and
`<(…)` — and returns every simple command it finds, in source order. Each one is named by the
program it really runs:

- the program is the basename of the first word (`/bin/rm`, `\\rm`, `"rm"` and `r''m` are all
  `rm`), after unwrapping launchers that run their arguments as a command (`env`, `command`,
  `builtin`, `exec`, `sudo`, `nice`, `timeout`, `strace`, `prlimit`, …) with their own options
  read as getopt reads them (clusters, attached values, abbreviated long options: see
  `_launchers`); a command line given to one (`flock FILE -c '…'`) is parsed in turn;
- a literal script given to a shell (`bash -c '…'`, `sh -c "…"`) or to `eval` is parsed again,
  recursively, and its commands take the place of the launcher;
- `xargs PROG …` runs PROG with arguments read at run time (`open_args`); `find … -exec PROG …
  ;` runs PROG with `{}` unknown.

What cannot be known before the command runs is marked, never guessed: a word built from an
expansion or a command substitution is an argument of unknown value (None), and a program that
is not a literal word — a variable, `$(…)`, a glob, a shell reading a script from a file or
stdin, `eval`/`sh -c` of a non-literal string, `source`, a line that does not parse — is a
command with `program=None` and a `reason`. Matching treats those as the most restrictive rule
that could apply (see `command_rules`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath

import tree_sitter
import tree_sitter_bash

from comal.tools._launchers import LAUNCHERS, XARGS, scan

MAX_DEPTH = 4
"""How many levels of `bash -c` / `eval` strings are parsed before giving up (unresolved)."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command the line runs.

    `args` holds each argument's static value, or None where the value is only known at run
    time. `open_args` says that more arguments, unseen here, are added at run time (xargs).
    """

    program: str | None
    """Basename of the program run; None when it cannot be known statically."""
    args: tuple[str | None, ...] = ()
    open_args: bool = False
    reason: str = ""
    """Why the program (or part of it) is unknown; empty when fully resolved."""
    text: str = ""
    """The source text of the command, for messages."""

    @property
    def resolved(self) -> bool:
        """True when the program and every argument are known."""
        return self.program is not None and not self.open_args and None not in self.args


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})
"""Programs that run a script: their `-c` string is parsed, anything else is unresolved."""

_SCRIPT_RUNNERS = frozenset({"source", ".", "fc"})
"""Builtins that run commands from a file or the history: never resolvable."""

_RENAMERS = frozenset({"alias", "hash", "enable"})
"""Builtins that can make a later name run another program (`alias x='rm -rf'`,
`hash -p /bin/rm x`): what follows them cannot be named statically."""

_STRING_RUNNERS = frozenset({"watch", "su", "runuser", "script", "parallel"})
"""Programs that run one argument as a shell command line (`su -c`, `watch 'cmd'`)."""

_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})

# Node types whose value is only known at run time.
_DYNAMIC = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "process_substitution",
     "arithmetic_expansion", "ansi_c_string", "translated_string", "brace_expression"}
)  # fmt: skip
_STATEMENT_PARTS = frozenset({"variable_assignment", "file_redirect", "herestring_redirect"})


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _unescape(text: str, *, quoted: bool) -> str:
    r"""A bare word's or a double-quoted string's backslash escapes removed.

    Inside double quotes only `\$`, `` \` ``, `\"`, `\\` and `\<newline>` are escapes (bash).
    """
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "\n":
                i += 2
                continue
            if not quoted or nxt in '$`"\\':
                out.append(nxt)
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _is_option(word: str | None) -> bool:
    return word is not None and word.startswith("-")


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


class _Walker:
    """Collects simple commands from one tree (and the trees of literal nested scripts)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.found: list[SimpleCommand] = []

    # --- values ---------------------------------------------------------------------------

    def value(self, node: tree_sitter.Node) -> str | None:
        """The static value of a word-like node, or None; nested commands are collected."""
        kind = node.type
        if kind in _DYNAMIC:
            self.visit_children(node)
            return None
        if kind == "word":
            return _unescape(_text(node), quoted=False)
        if kind == "number":
            return _text(node)
        if kind == "raw_string":
            return _text(node)[1:-1]
        if kind == "string":
            parts: list[str] = []
            dynamic = False
            for child in node.named_children:
                if child.type == "string_content":
                    parts.append(_unescape(_text(child), quoted=True))
                else:
                    dynamic = True
                    self.value(child)
            return None if dynamic else "".join(parts)
        if kind == "concatenation":
            out: list[str] = []
            known = True
            for child in node.children:
                # Punctuation the grammar leaves unnamed (a bare `=`, `:`) is kept as written.
                value = self.value(child) if child.is_named else _text(child)
                known = known and value is not None
                out.append(value or "")
            return "".join(out) if known else None
        self.visit_children(node)
        return None

    # --- statements -----------------------------------------------------------------------

    def visit(self, node: tree_sitter.Node) -> None:
        if node.type == "command":
            self.command(node)
        else:
            self.visit_children(node)

    def visit_children(self, node: tree_sitter.Node) -> None:
        for child in node.named_children:
            self.visit(child)

    def command(self, node: tree_sitter.Node) -> None:
        text = _text(node)
        name_node = node.child_by_field_name("name")
        words: list[str | None] = []
        for child in node.named_children:
            if child.type in _STATEMENT_PARTS:
                self.visit_children(child)
            elif child.type == "command_name":
                words.append(self.value(child.named_children[0]) if child.named_children else None)
            elif child.type not in ("comment",):
                words.append(self.value(child))
        if name_node is None:
            return
        self.resolve(words, text)

    def unresolved(self, text: str, reason: str) -> None:
        self.found.append(SimpleCommand(None, (), False, reason, text))

    def resolve(self, words: list[str | None], text: str) -> None:
        """Add the command run by `words` (program first), unwrapping launchers."""
        if not words:
            return
        head = words[0]
        if head is None:
            self.unresolved(text, "the program is an expansion or command substitution")
            return
        if head == "" or any(ch in head for ch in "*?[{"):
            self.unresolved(text, f"the program {head!r} is not a plain name")
            return
        program = PurePosixPath(head).name or head
        args = words[1:]
        if program in LAUNCHERS:
            self.unwrap(program, args, text)
        elif program in SHELLS:
            self.shell(program, args, text)
        elif program == "eval":
            self.script(list(args), text, "eval")
        elif program == "trap" and args and args[0] != "-" and not _is_option(args[0]):
            # `trap 'cmd' EXIT` runs its first argument as a command line later on.
            self.found.append(SimpleCommand(program, tuple(args), False, "", text))
            self.script(args[:1], text, "trap")
        elif program in _SCRIPT_RUNNERS:
            self.unresolved(text, f"{program} runs commands from a file")
        elif program in _RENAMERS and args:
            self.unresolved(text, f"{program} can make a name run another program")
        elif program in _STRING_RUNNERS:
            self.unresolved(text, f"{program} runs a command line given as an argument")
        elif program == "xargs":
            self.xargs(args, text)
        else:
            self.found.append(SimpleCommand(program, tuple(args), False, "", text))
            if program == "find":
                self.find_exec(args, text)

    def unwrap(self, program: str, args: list[str | None], text: str) -> None:
        self.found.append(SimpleCommand(program, tuple(args), False, "", text))
        found = scan(program, LAUNCHERS[program], args)
        if found.reason:
            self.unresolved(text, found.reason)
        elif found.script is not None:
            self.script([found.script], text, f"{program} -c")
        elif found.start < len(args):
            self.resolve(args[found.start :], text)

    def shell(self, program: str, args: list[str | None], text: str) -> None:
        i = 0
        while i < len(args):
            arg = args[i]
            if arg is None or not arg.startswith(("-", "+")) or arg in ("-", "--"):
                break
            if not arg.startswith("--") and "c" in arg[1:]:
                self.script(args[i + 1 : i + 2], text, f"{program} -c")
                return
            # `-o pipefail` and `-O extglob` take a value.
            i += 2 if arg[1:] in ("o", "O") else 1
        self.unresolved(text, f"{program} runs a script from a file or standard input")

    def script(self, parts: list[str | None], text: str, via: str) -> None:
        if not parts or any(p is None for p in parts):
            self.unresolved(text, f"{via} runs a string only known at run time")
            return
        if self.depth >= MAX_DEPTH:
            self.unresolved(text, f"{via} strings nested deeper than {MAX_DEPTH} levels")
            return
        source = " ".join(p for p in parts if p is not None)
        self.found.extend(_parse(source, self.depth + 1))

    def xargs(self, args: list[str | None], text: str) -> None:
        scanned = scan("xargs", XARGS, args)
        if scanned.reason:
            self.unresolved(text, scanned.reason)
            return
        rest = args[scanned.start :] or ["echo"]
        before = len(self.found)
        self.resolve(list(rest), text)
        # Whatever xargs runs also gets the arguments it reads at run time.
        for k in range(before, len(self.found)):
            found = self.found[k]
            self.found[k] = SimpleCommand(found.program, found.args, True, found.reason, text)

    def find_exec(self, args: list[str | None], text: str) -> None:
        i = 0
        while i < len(args):
            if args[i] in _FIND_EXEC:
                end = i + 1
                while end < len(args) and args[end] not in (";", "+"):
                    end += 1
                inner = [None if a is not None and "{}" in a else a for a in args[i + 1 : end]]
                self.resolve(inner, text)
                i = end
            i += 1


def _parse(source: str, depth: int) -> list[SimpleCommand]:
    tree = _parser().parse(source.encode("utf-8"))
    if tree.root_node.has_error:
        return [SimpleCommand(None, (), False, "the command line does not parse", source)]
    walker = _Walker(depth)
    walker.visit(tree.root_node)
    return walker.found


def parse_command(line: str) -> tuple[SimpleCommand, ...]:
    """Every simple command `bash -c line` would run, as far as it can be known statically.

    Args:
        line: a command line.

    Returns:
        The simple commands in source order; unresolvable parts have `program=None`.
    """
    return tuple(_parse(line, 0))
