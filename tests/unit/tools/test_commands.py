"""Parsing Bash lines into the simple commands they run (tree-sitter-bash)."""

from __future__ import annotations

import pytest

from comal.tools.commands import SimpleCommand, parse_command


def programs(line: str) -> list[str | None]:
    return [c.program for c in parse_command(line)]


def test_simple_command_keeps_program_and_arguments() -> None:
    assert parse_command("rm -rf build") == (
        SimpleCommand("rm", ("-rf", "build"), text="rm -rf build"),
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("a && b || c; d & e | f", ["a", "b", "c", "d", "e", "f"]),
        ("(a; b) && { c; }", ["a", "b", "c"]),
        ("a\nb\n\nc", ["a", "b", "c"]),
        ("if a; then b; elif c; then d; else e; fi", ["a", "b", "c", "d", "e"]),
        ("for x in 1 2; do a $x; done; while b; do c; done", ["a", "b", "c"]),
        ("case $x in y) a ;; *) b ;; esac", ["a", "b"]),
        ("f() { a; }; f", ["a", "f"]),
        ("! a", ["a"]),
        ("a > out 2>&1 < in", ["a"]),
    ],
)
def test_every_simple_command_of_a_list_is_found(line: str, expected: list[str]) -> None:
    assert programs(line) == expected


@pytest.mark.parametrize(
    "line", ["/bin/rm x", "/usr/bin/rm x", "\\rm x", '"rm" x', "'rm' x", "r''m x", "r\\m x"]
)
def test_the_program_is_the_basename_of_the_literal_word(line: str) -> None:
    (command,) = parse_command(line)
    assert command.program == "rm"
    assert command.args == ("x",)


def test_substitutions_are_searched_and_their_values_unknown() -> None:
    commands = parse_command('echo "$(rm a)" `rm b` <(rm c) $HOME')
    assert [c.program for c in commands] == ["rm", "rm", "rm", "echo"]
    assert commands[-1].args == (None, None, None, None)
    assert not commands[-1].resolved


def test_here_document_bodies_and_assignments_are_searched() -> None:
    assert programs("cat <<EOF\n$(rm a)\nEOF") == ["cat", "rm"]
    assert programs("X=$(rm b) ls") == ["rm", "ls"]
    assert programs("cat <<'EOF'\n$(rm a)\nEOF") == ["cat"]  # a quoted here-doc is text


@pytest.mark.parametrize(
    ("line", "inner"),
    [
        ("env A=1 -u B rm x", "rm"),
        ("command rm x", "rm"),
        ("builtin echo x", "echo"),
        ("exec rm x", "rm"),
        ("sudo -u root -E rm x", "rm"),
        ("nice -n 5 rm x", "rm"),
        ("timeout -s KILL 10 rm x", "rm"),
        ("nohup rm x", "rm"),
        ("sudo env A=1 nice timeout 5 rm x", "rm"),
    ],
)
def test_launchers_are_unwrapped(line: str, inner: str) -> None:
    commands = parse_command(line)
    assert commands[-1].program == inner
    assert commands[-1].args == ("x",)


def test_literal_shell_strings_and_eval_are_parsed_recursively() -> None:
    assert parse_command("bash -c 'rm -rf a; ls'")[0] == SimpleCommand(
        "rm", ("-rf", "a"), text="rm -rf a"
    )
    assert programs("sh -c \"bash -c 'rm x'\"") == ["rm"]
    assert programs("bash -o pipefail -lc 'rm x'") == ["rm"]
    assert programs('eval "rm -rf a"') == ["rm"]
    assert programs("trap 'rm -rf a' EXIT") == ["trap", "rm"]
    assert programs("busybox rm -rf a") == ["busybox", "rm"]


@pytest.mark.parametrize(
    "line",
    [
        "$X -rf a",
        "$(echo rm) a",
        'sh -c "$CMD"',
        "bash script.sh",
        "bash <<'EOF'\nrm x\nEOF",
        "eval $CMD",
        "source ./env.sh",
        ". ./env.sh",
        "r* a",
        "{r,}m a",
        "sudo -s",
        "alias ll='rm -rf'",
        "hash -p /bin/rm del",
        "env -S 'rm x'",
        "echo 'unterminated",
        'bash -c \'sh -c "bash -c \\"sh -c \\\\\\"bash -c x\\\\\\"\\""\'',
    ],
)
def test_what_cannot_be_known_is_an_unknown_program(line: str) -> None:
    unknown = [c for c in parse_command(line) if c.program is None]
    assert unknown, parse_command(line)
    assert all(c.reason for c in unknown)


def test_xargs_and_find_exec_run_their_program_with_unknown_arguments() -> None:
    (_, xargs) = parse_command("ls | xargs -0 -n 1 rm -f")
    assert (xargs.program, xargs.args, xargs.open_args) == ("rm", ("-f",), True)
    find, inner = parse_command("find . -name '*.o' -exec rm -f {} \\;")
    assert find.program == "find"
    assert (inner.program, inner.args) == ("rm", ("-f", None))
