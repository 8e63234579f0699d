"""Text mode: the final answer on stdout; progress on stderr only when stderr is a terminal
(or with --verbose, which adds the commentary); warnings and errors always."""

from __future__ import annotations

import io

from comal.agent.core.events import (
    AssistantReplied,
    Notice,
    SessionOpened,
    TextStreamed,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from comal.cli.render import Renderer


def _run(*, progress: bool, verbose: bool) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    r = Renderer("text", out=out, err=err, progress=progress, verbose=verbose)
    r(SessionOpened("s-1", "m", "p", 1000, "catalog", False))
    r(TextStreamed("Looking around first."))
    r(ToolStarted("c1", "Bash", "Bash ls"))
    r(Notice("WARN", "something to know"))
    r.finish(session_id="s-1", status="answered", answer="The answer.", error=None)
    return out.getvalue(), err.getvalue()


def test_not_a_terminal_shows_answer_and_warnings_only() -> None:
    out, err = _run(progress=False, verbose=False)
    assert out == "The answer.\n"
    assert "→ Bash ls" not in err
    assert "Looking around" not in err
    assert "WARN: something to know" in err


def test_a_terminal_shows_progress_but_not_the_commentary() -> None:
    out, err = _run(progress=True, verbose=False)
    assert out == "The answer.\n"
    assert "→ Bash ls" in err
    assert "Looking around" not in err


def test_verbose_shows_everything_on_stderr() -> None:
    out, err = _run(progress=False, verbose=True)
    assert out == "The answer.\n"
    assert "→ Bash ls" in err
    assert "Looking around first." in err


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_gets_a_working_line_redrawn_in_place_and_cleared_for_other_lines() -> None:
    out, err = io.StringIO(), io.StringIO()
    clock = Clock()
    r = Renderer(
        "text", out=out, err=err, progress=True, live=True, clock=clock, columns=lambda: 100
    )
    r(TurnStarted(1, 2000, False, 512))
    clock.now = 12.0
    r(AssistantReplied("", 1, "tool_calls", 2100, 30))
    r(ToolStarted("c1", "Bash", "Bash make test"))
    r(ToolOutput("c1", "building\nlinking app\n"))  # drawn at the next frame, not per chunk
    clock.now = 40.5
    r.tick()
    r(ToolFinished("c1", "Bash", "error", None, 41, "cannot start bash: No such file\nmore"))
    r(TurnFinished("s-1", "done", 2, "answered"))
    r.finish(session_id="s-1", status="answered", answer="done", error=None)
    clear = "\r\x1b[2K"
    assert err.getvalue().split(clear) == [
        "",
        "⠋ Working · 0s · ↑ 2,000 ↓ 0 tokens · ctrl+c to interrupt",
        "⠋ Working · 2s · ↑ 2,100 ↓ 30 tokens · ctrl+c to interrupt",
        "  → Bash make test\n",
        "⠋ Bash make test · 2s · ↑ 2,100 ↓ 30 tokens · ctrl+c to interrupt",
        "⠴ Bash make test · 30s · ↑ 2,100 ↓ 30 tokens · ctrl+c to interrupt · │ linking app",
        "  ← Bash error · 41 bytes · cannot start bash: No such file\n",
        "⠴ Working · 30s · ↑ 2,100 ↓ 30 tokens · ctrl+c to interrupt",
        "session s-1 · answered\n",
    ]
    assert out.getvalue() == "done\n"


def test_off_a_terminal_nothing_extra_and_json_formats_never_see_running_output() -> None:
    out, err = io.StringIO(), io.StringIO()
    r = Renderer("text", out=out, err=err, progress=False, live=False)
    r(TurnStarted(1, 2000, False, 512))
    r(ToolStarted("c1", "Bash", "Bash ls"))
    r(ToolOutput("c1", "a.txt\n"))
    r(ToolFinished("c1", "Read", "error", None, 54, "file not found: notes.txt"))
    assert (out.getvalue(), err.getvalue()) == ("", "")
    stream = io.StringIO()
    s = Renderer("stream-json", out=stream, err=io.StringIO())
    s(ToolOutput("c1", "a.txt\n"))
    s(ToolFinished("c1", "Read", "error", None, 54, "file not found: notes.txt"))
    assert [line.split('"type": ')[1][:15] for line in stream.getvalue().splitlines()] == [
        '"tool_finished"'
    ]


def test_an_error_or_denial_shows_its_reason_on_one_line() -> None:
    out, err = io.StringIO(), io.StringIO()
    r = Renderer("text", out=out, err=err, progress=True)
    r(ToolFinished("c1", "Read", "error", None, 54, "file not found: notes.txt (workspace /w)"))
    r(ToolFinished("c2", "Bash", "denied", None, 60, "permission denied: rm -rf is never run\n"))
    r(ToolFinished("c3", "Bash", "ok", 0, 3, "ok\n"))
    assert err.getvalue() == (
        "  ← Read error · 54 bytes · file not found: notes.txt (workspace /w)\n"
        "  ← Bash denied · 60 bytes · permission denied: rm -rf is never run\n"
        "  ← Bash ok · exit 0 · 3 bytes\n"
    )
