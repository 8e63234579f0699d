"""The front door, run in-process against the loopback fake server: `comal "task"`, `-c`,
`-r [ID]` and its picker, the closest flag for an unknown one, and the flags of Claude Code and
Codex that mean what ours do."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from comal.cli.flags import PERMISSION_MODES, tool_rules
from comal.cli.main import command_of, main, top_parser
from comal.config import PermissionRule, load_config
from comal.ledger.store import Ledger
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import configure

Captured = tuple[int, str, str]


class Terminal(io.StringIO):
    """stdin as a terminal a person types `answer` into."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def here(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(workspace)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    return workspace


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Captured:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def messages(server: FakeServer, index: int) -> list[dict[str, Any]]:
    """The chat messages of the server's `index`th request."""
    return cast("list[dict[str, Any]]", server.received[index].body["messages"])


def _sessions(workspace: Path) -> list[str]:
    with Ledger.open(load_config(cwd=workspace).ledger_path) as ledger:
        return [s.id for s in ledger.sessions()]


def test_a_task_as_first_word_runs_it_off_a_terminal(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(["Hello from the model."]) as server:
        configure(here, server, "openai-chat")
        code, out, err = cli(capsys, "say hello")
        assert code == 0, err
        assert out == "Hello from the model.\n"
        first = messages(server, 0)
    assert first[-1]["content"] == "say hello"


def test_subcommands_still_win_over_a_task(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer(["Done."]) as server:
        configure(here, server, "openai-chat")
        assert cli(capsys, "-p", "first")[0] == 0
    code, out, err = cli(capsys, "sessions", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [row["title"] for row in rows] == ["first"]
    code, out, _ = cli(capsys, "show", rows[0]["short_id"])
    assert code == 0
    assert "Done." in out


def test_continue_and_resume_by_id_take_the_same_session(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(["One.", "Two.", "Three."]) as server:
        configure(here, server, "openai-chat")
        assert cli(capsys, "-p", "first")[0] == 0
        (sid,) = _sessions(here)
        code, out, err = cli(capsys, "-c", "-p", "second")
        assert (code, out) == (0, "Two.\n"), err
        code, out, err = cli(capsys, "-r", sid[:12], "-p", "third")
        assert (code, out) == (0, "Three.\n"), err
        texts = [m["content"] for m in messages(server, 2)]
    assert _sessions(here) == [sid]
    assert [t for t in texts if t in ("first", "second", "third")] == ["first", "second", "third"]


def _two_sessions(here: Path, capsys: pytest.CaptureFixture[str], server: FakeServer) -> list[str]:
    configure(here, server, "openai-chat")
    assert cli(capsys, "-p", "older task")[0] == 0
    assert cli(capsys, "-p", "newer task")[0] == 0
    with Ledger.open(load_config(cwd=here).ledger_path) as ledger:
        return [s.id for s in sorted(ledger.sessions(), key=lambda s: -s.last_activity_at)]


def test_resume_without_id_off_a_terminal_lists_the_sessions_and_refuses(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer(["A.", "B."]) as server:
        newer, older = _two_sessions(here, capsys, server)
        code, out, err = cli(capsys, "-r", "-p", "more")
        assert len(server.received) == 2
    assert (code, out) == (2, "")
    listed = err.splitlines()
    assert "--resume needs a session id" in listed[0]
    assert listed[1].split()[0] == "1."
    assert listed[1].split()[-3:] == ["answered", "newer", "task"]
    assert listed[2].split()[0] == "2."
    assert listed[2].split()[-3:] == ["answered", "older", "task"]
    with Ledger.open(load_config(cwd=here).ledger_path) as ledger:
        assert listed[1].split()[1] == ledger.short_id(newer)
        assert listed[2].split()[1] == ledger.short_id(older)


def test_resume_without_id_on_a_terminal_asks_which(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(["A.", "B.", "Again."]) as server:
        _newer, older = _two_sessions(here, capsys, server)
        monkeypatch.setattr(sys, "stdin", Terminal("2\n"))
        code, out, err = cli(capsys, "-r", "-p", "more")
        assert (code, out) == (0, "Again.\n"), err
        texts = [m["content"] for m in messages(server, 2)]
    assert "resume which session? [1-2]" in err
    assert "older task" in texts
    assert "newer task" not in texts
    with Ledger.open(load_config(cwd=here).ledger_path) as ledger:
        assert ledger.entries(older, kinds=("message.user",))[-1].payload["message"] is not None
        assert len(ledger.entries(older, kinds=("message.user",))) == 2


def test_an_unknown_flag_is_answered_with_the_closest_one(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--alowedTools", "Bash", "-p", "hi"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "comal: unknown option --alowedTools (did you mean --allowedTools?)"
    )
    with pytest.raises(SystemExit):
        main(["sessions", "--json", "--lmit", "3"])
    out, err = capsys.readouterr()
    assert err.splitlines()[-1] == "comal: unknown option --lmit (did you mean --limit?)"
    assert json.loads(out) == {
        "error": {"code": "USAGE", "message": "unknown option --lmit (did you mean --limit?)"}
    }


def test_claude_code_tool_rules_become_permission_rules() -> None:
    assert tool_rules("allow", ["Read, Bash(git diff:*) Edit", "Bash(npm run test)"]) == (
        PermissionRule("allow", "Read", "*"),
        PermissionRule("allow", "Bash", "git diff:*"),
        PermissionRule("allow", "Edit", "*"),
        PermissionRule("allow", "Bash", "npm run test"),
    )
    assert {name: PERMISSION_MODES[name] for name in ("plan", "acceptEdits")} == {
        "plan": "read-only",
        "acceptEdits": "workspace-write",
    }


def test_disallowed_tools_deny_and_the_system_prompt_is_appended(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call: dict[str, Any] = {"id": "b1", "name": "Bash", "arguments": {"command": "echo hi"}}
    with FakeServer([{"tool_calls": [call]}, "It was denied."]) as server:
        configure(here, server, "openai-chat")
        code, out, err = cli(
            capsys,
            "--disallowedTools",
            "Bash(echo:*)",
            "--append-system-prompt",
            "Answer in French.",
            "--permission-mode",
            "acceptEdits",
            "-p",
            "run echo",
        )
        assert (code, out) == (0, "It was denied.\n"), err
        system = messages(server, 0)[0]
        result = messages(server, 1)[-1]
    assert system["role"] == "system"
    assert system["content"].rstrip().endswith("Answer in French.")
    assert result["role"] == "tool"
    assert "deny rule Bash(echo:*)" in result["content"]


def test_sessions_lists_this_directory_by_latest_activity(
    here: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(["A.", "B.", "C.", "D."]) as server:
        _newer, older = _two_sessions(here, capsys, server)
        assert cli(capsys, "-r", older, "-p", "more on the older")[0] == 0
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        configure(elsewhere, server, "openai-chat")
        monkeypatch.chdir(elsewhere)
        assert cli(capsys, "-p", "somewhere else")[0] == 0
        monkeypatch.chdir(here)
    code, out, err = cli(capsys, "sessions")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "AGE", "STATUS", "CWD", "TITLE"]
    assert [row.split()[2] for row in rows] == ["answered", "answered"]
    assert [" ".join(row.split()[-2:]) for row in rows] == ["older task", "newer task"]
    code, out, err = cli(capsys, "sessions", "--limit", "1")
    assert [" ".join(row.split()[-2:]) for row in out.splitlines()[1:]] == ["older task"]
    assert err == "… and 1 older (`--limit N` shows more)\n"
    code, out, _ = cli(capsys, "sessions", "--all", "--json")
    assert [row["title"] for row in json.loads(out)] == [
        "somewhere else",
        "older task",
        "newer task",
    ]
    assert {row["status"] for row in json.loads(out)} == {"active"}


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["sessions", "--all"], "sessions"),
        (["fix the failing test"], None),
        (["show"], "show"),
        (["--model", "show", "fix it"], None),  # a flag's value is not a command
        (["-p", "explain", "sessions"], "sessions"),
        (["--allowedTools", "Bash", "-p", "hi"], None),
        (["--verbose", "doctor"], "doctor"),
        (["--", "show"], None),
    ],
)
def test_the_first_positional_word_is_a_command_only_when_it_names_one(
    argv: list[str], command: str | None
) -> None:
    assert command_of(argv, top_parser(task=False)) == command
