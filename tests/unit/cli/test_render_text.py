"""Text mode: the final answer on stdout; progress on stderr only when stderr is a terminal
(or with --verbose, which adds the commentary); warnings and errors always."""

from __future__ import annotations

import io

from comal.agent.events import Notice, SessionOpened, TextStreamed, ToolStarted
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
