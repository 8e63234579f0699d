"""Glob and Grep: find files by name and by content, deterministically.

Invariants:
- Both walk the same way (`_globs.walk_files`): sorted by name within each directory, `.git`
  skipped, `.gitignore` honoured, symlinked directories not followed. Output paths are
  relative to the workspace when inside it, else absolute; one per line.
- Grep uses ripgrep when it is on PATH (or when told to) and a pure-Python fallback
  otherwise. Both are configured to agree on which files are searched: hidden files included,
  `.gitignore` honoured even outside a git repository, global/parent/`.ignore` files not
  consulted, symlinks not followed, files with a NUL byte in their first 64 KiB skipped, and
  paths in the same order. Patterns are regular expressions; ripgrep's and Python's dialects
  agree on the common subset.
- Output is capped at `output_limit_bytes` with a note saying so.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from comal.errors import ToolError
from comal.messages import JSONObject, ToolSpec
from comal.tools._globs import glob_regex, walk_files
from comal.tools.base import (
    NoPreparation,
    PathArgument,
    Preparation,
    ToolContext,
    ToolOutcome,
    display_path,
    error_outcome,
    resolve_path,
    string_arg,
    text_outcome,
)

MAX_GLOB_RESULTS = 2000
GREP_OUTPUT_LIMIT_BYTES = 4 * 1024 * 1024
_BINARY_SNIFF_BYTES = 64 * 1024

GLOB_SPEC = ToolSpec(
    name="Glob",
    description=(
        "List files whose path matches a glob pattern, relative to `path` (default: the "
        "workspace). `*` and `?` stay within one directory, `**/` spans directories, "
        "`{a,b}` gives alternatives: `**/*.py`, `src/**/test_*.{ts,tsx}`. Honours .gitignore; "
        "skips .git. Results are sorted by path."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern, e.g. `**/*.py`."},
            "path": {
                "type": "string",
                "description": "Directory to search from. Default: the workspace.",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
)

GREP_SPEC = ToolSpec(
    name="Grep",
    description=(
        "Search file contents with a regular expression (ripgrep syntax). `output_mode` "
        "`files_with_matches` (default) lists matching files; `content` shows matching lines "
        "as `path:line:text`. Filter files with `glob` (e.g. `*.py`, or `!*.min.js` to "
        "exclude). Honours .gitignore; skips .git and binary files."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {
                "type": "string",
                "description": "File or directory to search. Default: the workspace.",
            },
            "glob": {"type": "string", "description": "Only search files matching this glob."},
            "case_insensitive": {"type": "boolean", "description": "Ignore case."},
            "output_mode": {
                "type": "string",
                "enum": ["files_with_matches", "content"],
                "description": "What to return. Default files_with_matches.",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
)


def _search_root(arguments: JSONObject, ctx: ToolContext) -> tuple[str, Path]:
    given = string_arg(arguments, "path", ".")
    return given, resolve_path(ctx.workspace, given or ".")


def _prefixed(prefix: str, rel: str) -> str:
    return rel if prefix == "." else f"{prefix}/{rel}"


class _SearchTool(PathArgument, NoPreparation):
    """What Glob and Grep share: both search under the optional `path` argument."""

    path_default = "."


class GlobTool(_SearchTool):
    """The `Glob` tool.

    Args:
        max_results: paths listed before the rest is summarised.
    """

    spec = GLOB_SPEC
    read_only = True

    def __init__(self, max_results: int = MAX_GLOB_RESULTS) -> None:
        self.max_results = max_results

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,
        preparation: Preparation | None,  # noqa: ARG002 - nothing to prepare
    ) -> ToolOutcome:
        """List matching files."""
        try:
            pattern = string_arg(arguments, "pattern")
            given, root = _search_root(arguments, ctx)
            if pattern.startswith("/"):
                raise ToolError("pattern must be relative; put the directory in `path`")
            if not root.is_dir():
                raise ToolError(f"{given} is not a directory")
        except ToolError as exc:
            return error_outcome(exc.message)
        regex = glob_regex(pattern)
        prefix = display_path(ctx.workspace, root)

        def collect() -> list[str]:
            return [rel for rel in walk_files(root) if regex.match(rel)]

        found = await asyncio.to_thread(collect)
        if not found:
            return text_outcome(f"No files match {pattern} under {prefix}")
        shown = [_prefixed(prefix, rel) for rel in found[: self.max_results]]
        if len(found) > self.max_results:
            more = len(found) - self.max_results
            shown.append(f"[{more} more files not shown; narrow the pattern]")
        return text_outcome("\n".join(shown) + "\n")


class GrepTool(_SearchTool):
    """The `Grep` tool.

    Args:
        use_ripgrep: True forces ripgrep, False forces the Python fallback, None picks
            ripgrep when `rg` is on the context's PATH.
        output_limit_bytes: output bytes kept before a truncation note.
    """

    spec = GREP_SPEC
    read_only = True

    def __init__(
        self, use_ripgrep: bool | None = None, output_limit_bytes: int = GREP_OUTPUT_LIMIT_BYTES
    ) -> None:
        self.use_ripgrep = use_ripgrep
        self.output_limit_bytes = output_limit_bytes

    async def run(
        self,
        arguments: JSONObject,
        ctx: ToolContext,
        preparation: Preparation | None,  # noqa: ARG002 - nothing to prepare
    ) -> ToolOutcome:
        """Search and return matching files or lines."""
        try:
            query = _GrepQuery.from_arguments(arguments, ctx)
            rg = self._ripgrep(ctx)
            if rg is not None:
                output = await _run_ripgrep(rg, query, ctx, self.output_limit_bytes)
            else:
                output = await asyncio.to_thread(_python_grep, query, self.output_limit_bytes)
        except ToolError as exc:
            return error_outcome(exc.message)
        if not output:
            return text_outcome(f"No matches for {query.pattern!r} under {query.prefix}")
        if len(output) > self.output_limit_bytes:
            kept = output[: self.output_limit_bytes]
            kept = kept[: kept.rfind(b"\n") + 1] or kept
            note = f"[output truncated: kept {len(kept)} bytes; narrow the search]\n"
            output = kept + note.encode("utf-8")
        return ToolOutcome(output)

    def _ripgrep(self, ctx: ToolContext) -> str | None:
        if self.use_ripgrep is False:
            return None
        found = shutil.which("rg", path=ctx.env.get("PATH"))
        if found is None and self.use_ripgrep:
            raise ToolError("ripgrep (rg) is not installed")
        return found


@dataclass(frozen=True, slots=True)
class _GrepQuery:
    """A validated Grep call."""

    pattern: str
    root: Path
    prefix: str
    """Display path of the directory output paths are relative to ("." for the workspace)."""
    glob: str | None
    ignore_case: bool
    content: bool

    @classmethod
    def from_arguments(cls, arguments: JSONObject, ctx: ToolContext) -> _GrepQuery:
        pattern = string_arg(arguments, "pattern")
        given, root = _search_root(arguments, ctx)
        if not root.exists():
            raise ToolError(f"{given}: no such file or directory")
        glob = arguments.get("glob")
        mode = string_arg(arguments, "output_mode", "files_with_matches")
        return cls(
            pattern=pattern,
            root=root,
            prefix=display_path(ctx.workspace, root if root.is_dir() else root.parent),
            glob=glob if isinstance(glob, str) and glob else None,
            ignore_case=arguments.get("case_insensitive") is True,
            content=mode == "content",
        )


async def _run_ripgrep(rg: str, query: _GrepQuery, ctx: ToolContext, limit: int) -> bytes:
    # rg runs from the search directory without a path argument, so it prints paths relative
    # to it (no "./"); the prefix is added here exactly as the fallback adds it.
    args = [
        "--no-config",
        "--color=never",
        "--hidden",
        "--no-require-git",
        "--no-ignore-global",
        "--no-ignore-exclude",
        "--no-ignore-dot",
        "--no-ignore-parent",
        "--sort=path",
        "--glob=!.git",
    ]
    if query.glob:
        args.append(f"--glob={query.glob}")
    if query.ignore_case:
        args.append("--ignore-case")
    args += ["--line-number", "--no-heading", "--with-filename"] if query.content else ["-l"]
    args += ["-e", query.pattern]
    cwd = query.root if query.root.is_dir() else query.root.parent
    if not query.root.is_dir():
        args += ["--", query.root.name]
    proc = await asyncio.create_subprocess_exec(
        rg,
        *args,
        cwd=cwd,
        env=dict(ctx.env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await proc.communicate()
    if proc.returncode not in (0, 1):
        message = stderr.decode("utf-8", errors="replace").strip()
        raise ToolError(f"grep failed: {message or f'rg exited {proc.returncode}'}")
    if query.prefix == ".":
        return stdout[: limit + 1]
    prefix = query.prefix.encode("utf-8", errors="surrogateescape") + b"/"
    lines = stdout.splitlines(keepends=True)
    return b"".join(prefix + line for line in lines)[: limit + 1]


def _python_grep(query: _GrepQuery, limit: int) -> bytes:
    flags = re.IGNORECASE if query.ignore_case else 0
    try:
        regex = re.compile(query.pattern, flags)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {query.pattern!r}: {exc}") from exc
    if query.root.is_dir():
        candidates = list(walk_files(query.root, include_symlinks=False))
        base = query.root
    else:
        candidates, base = [query.root.name], query.root.parent
    include = exclude = None
    if query.glob:
        negated = query.glob.startswith("!")
        glob = query.glob[1:] if negated else query.glob
        # ripgrep's globs follow .gitignore rules: without a "/" they match the file name.
        matcher = glob_regex(glob if "/" in glob else f"**/{glob}")
        include, exclude = (None, matcher) if negated else (matcher, None)
    prefix = "" if query.prefix == "." else query.prefix + "/"
    out = bytearray()
    for rel in candidates:
        if include is not None and not include.match(rel):
            continue
        if exclude is not None and exclude.match(rel):
            continue
        try:
            data = (base / rel).read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
            continue
        name = (prefix + rel).encode("utf-8", errors="surrogateescape")
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        for number, line in enumerate(lines, start=1):
            if b"\x00" in line:
                break
            # Searched as text (Unicode classes and case folding, as ripgrep does); the
            # surrogateescape round trip gives back the exact bytes for the output.
            if regex.search(line.decode("utf-8", errors="surrogateescape")) is None:
                continue
            if not query.content:
                out += name + b"\n"
                break
            out += name + b":" + str(number).encode() + b":" + line + b"\n"
        if len(out) > limit:
            break
    return bytes(out)
