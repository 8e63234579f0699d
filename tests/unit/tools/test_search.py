"""Glob and Grep over a real tree: patterns, ignores, output modes, fallback vs ripgrep."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from comal.messages import JSONObject, JSONValue
from comal.tools._globs import glob_regex, ignored, parse_gitignore
from comal.tools.base import ToolContext
from comal.tools.search import GlobTool, GrepTool

HAS_RG = shutil.which("rg") is not None


@pytest.fixture
def tree(workspace: Path) -> Path:
    files = {
        "README.md": "Project TODO list\n",
        "src/app.py": "def main():\n    # TODO: wire up\n    return 0\n",
        "src/util/strings.py": "def shout(s):\n    return s.upper()  # todo later\n",
        "src/util/data.json": '{"todo": true}\n',
        "tests/test_app.py": "from src.app import main\n\nassert main() == 0\n",
        "build/out.py": "TODO generated\n",
        "logs/app.log": "TODO in a log\n",
        ".hidden/notes.txt": "TODO hidden\n",
        ".gitignore": "build/\n*.log\n!keep.log\n",
        "logs/keep.log": "TODO kept\n",
        "a-b/x.py": "TODO dash\n",
        "crlf.txt": "first\r\nTODO crlf\r\n",
        "latin.txt": "caf\xe9 TODO\n",
    }
    for rel, text in files.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("latin-1") if rel == "latin.txt" else text.encode())
    (workspace / "bin.dat").write_bytes(b"TODO\x00binary")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("TODO in git\n")
    return workspace


async def glob(ctx: ToolContext, pattern: str, path: str | None = None) -> list[str]:
    args: JSONObject = {"pattern": pattern}
    if path is not None:
        args["path"] = path
    outcome = await GlobTool().run(args, ctx, None)
    assert not outcome.is_error, outcome.output
    return outcome.output.decode().splitlines()


def test_glob_regex_translation() -> None:
    assert glob_regex("**/*.py").match("a/b/c.py")
    assert glob_regex("**/*.py").match("c.py")
    assert not glob_regex("*.py").match("a/c.py")
    assert glob_regex("src/**").match("src/a/b")
    assert glob_regex("*.{ts,tsx}").match("x.tsx")
    assert not glob_regex("*.{ts,tsx}").match("x.js")
    assert glob_regex("file[0-9].txt").match("file7.txt")
    assert not glob_regex("file[!0-9].txt").match("file7.txt")
    assert glob_regex("a?c").match("abc")
    assert not glob_regex("a?c").match("a/c")


def test_gitignore_rules() -> None:
    rules = parse_gitignore("build/\n/top.txt\n*.log\n!keep.log\n# comment\n", "")
    assert ignored(rules, "build", True)
    assert not ignored(rules, "build", False)
    assert ignored(rules, "top.txt", False)
    assert not ignored(rules, "sub/top.txt", False)
    assert ignored(rules, "deep/x.log", False)
    assert not ignored(rules, "deep/keep.log", False)


async def test_glob_lists_sorted_files_honouring_gitignore(tree: Path, ctx: ToolContext) -> None:
    assert await glob(ctx, "**/*.py") == [
        "a-b/x.py",
        "src/app.py",
        "src/util/strings.py",
        "tests/test_app.py",
    ]
    assert await glob(ctx, "*.md") == ["README.md"]
    assert await glob(ctx, "**/*.log") == ["logs/keep.log"]
    assert await glob(ctx, "*.py", "src/util") == ["src/util/strings.py"]
    assert await glob(ctx, "**/HEAD") == ["No files match **/HEAD under ."]


async def test_glob_errors(tree: Path, ctx: ToolContext) -> None:
    not_dir = await GlobTool().run({"pattern": "*", "path": "README.md"}, ctx, None)
    assert not_dir.is_error
    assert b"not a directory" in not_dir.output
    absolute = await GlobTool().run({"pattern": "/etc/*"}, ctx, None)
    assert absolute.is_error
    assert b"relative" in absolute.output


async def test_glob_caps_results(tree: Path, ctx: ToolContext) -> None:
    outcome = await GlobTool(max_results=2).run({"pattern": "**/*.py"}, ctx, None)
    assert outcome.output.decode().splitlines() == [
        "a-b/x.py",
        "src/app.py",
        "[2 more files not shown; narrow the pattern]",
    ]


async def grep(ctx: ToolContext, tool: GrepTool, **arguments: JSONValue) -> bytes:
    outcome = await tool.run(dict(arguments), ctx, None)
    assert not outcome.is_error, outcome.output
    return outcome.output


async def test_grep_fallback_files_mode(tree: Path, ctx: ToolContext) -> None:
    out = await grep(ctx, GrepTool(use_ripgrep=False), pattern="TODO")
    assert out.decode().splitlines() == [
        ".hidden/notes.txt",
        "README.md",
        "a-b/x.py",
        "crlf.txt",
        "latin.txt",
        "logs/keep.log",
        "src/app.py",
    ]


async def test_grep_fallback_content_mode_is_byte_exact(tree: Path, ctx: ToolContext) -> None:
    tool = GrepTool(use_ripgrep=False)
    out = await grep(
        ctx,
        tool,
        pattern="todo",
        case_insensitive=True,
        output_mode="content",
        path="src",
        glob="*.py",
    )
    assert out == (
        b"src/app.py:2:    # TODO: wire up\n"
        b"src/util/strings.py:2:    return s.upper()  # todo later\n"
    )
    crlf = await grep(ctx, tool, pattern="crlf", output_mode="content")
    assert crlf == b"crlf.txt:2:TODO crlf\r\n"
    latin = await grep(ctx, tool, pattern="caf", output_mode="content", path="latin.txt")
    assert latin == b"latin.txt:1:caf\xe9 TODO\n"


async def test_grep_fallback_excluding_glob_and_no_match(tree: Path, ctx: ToolContext) -> None:
    tool = GrepTool(use_ripgrep=False)
    out = await grep(ctx, tool, pattern="TODO", glob="!*.txt")
    assert b"crlf.txt" not in out
    assert b"README.md" in out
    none = await grep(ctx, tool, pattern="nowhere-to-be-found")
    assert none == b"No matches for 'nowhere-to-be-found' under ."


async def test_grep_errors(tree: Path, ctx: ToolContext) -> None:
    bad = await GrepTool(use_ripgrep=False).run({"pattern": "("}, ctx, None)
    assert bad.is_error
    assert b"invalid regular expression" in bad.output
    missing = await GrepTool(use_ripgrep=False).run({"pattern": "x", "path": "nope"}, ctx, None)
    assert missing.is_error
    assert b"no such file" in missing.output


async def test_grep_output_cap(tree: Path, ctx: ToolContext) -> None:
    out = await grep(ctx, GrepTool(use_ripgrep=False, output_limit_bytes=30), pattern="TODO")
    assert (
        out
        == b".hidden/notes.txt\nREADME.md\n[output truncated: kept 28 bytes; narrow the search]\n"
    )


@pytest.mark.skipif(not HAS_RG, reason="ripgrep is not installed")
@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "TODO"},
        {"pattern": "todo", "case_insensitive": True, "output_mode": "content"},
        {"pattern": "TODO", "path": "src", "glob": "*.py", "output_mode": "content"},
        {"pattern": "TODO", "glob": "!*.txt"},
        {"pattern": "caf", "path": "latin.txt", "output_mode": "content"},
    ],
)
async def test_grep_fallback_agrees_with_ripgrep(
    tree: Path, ctx: ToolContext, arguments: dict[str, JSONValue]
) -> None:
    fallback = await grep(ctx, GrepTool(use_ripgrep=False), **arguments)
    ripgrep = await grep(ctx, GrepTool(use_ripgrep=True), **arguments)
    assert fallback == ripgrep
