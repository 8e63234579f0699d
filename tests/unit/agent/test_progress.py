"""The working line: folded from the events of a turn with an injected clock, so the spinner,
elapsed time, token counts, running command and output tail are exact."""

from __future__ import annotations

from comal.agent.core.events import (
    AssistantReplied,
    ChildActivity,
    TextStreamed,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnStarted,
)
from comal.agent.core.progress import Working


def test_the_line_counts_time_and_tokens_and_names_the_running_command() -> None:
    w = Working(started_at=100.0)
    assert w.line(100.0) == "⠋ Working · 0s · ↑ 0 ↓ 0 tokens · esc to interrupt"
    w.apply(TurnStarted(1, 3000, False, 512))
    w.apply(TextStreamed("x" * 40))  # 10 tokens by its text, until the reply reports them
    assert w.line(100.15) == "⠙ Working · 0s · ↑ 3,000 ↓ 10 tokens · esc to interrupt"
    w.apply(AssistantReplied("", 1, "tool_calls", 3204, 57))
    w.apply(ToolStarted("c1", "Bash", "Bash pytest -q"))
    w.apply(ToolOutput("c1", "collected 12 items\n\ntests/test_a.py ..."))
    w.apply(ToolOutput("c1", "..F\n"))
    w.apply(ToolOutput("other", "not this call's\n"))
    assert w.line(131.0) == "⠋ Bash pytest -q · 31s · ↑ 3,204 ↓ 57 tokens · esc to interrupt"
    assert list(w.tail) == ["collected 12 items", "tests/test_a.py .....F"]
    w.apply(ToolFinished("c1", "Bash", "ok", 1, 200, "…"))
    assert (w.call, list(w.tail)) == (None, [])
    w.apply(TurnStarted(2, 3500, True, 512))
    w.apply(AssistantReplied("done", 0, "stop", None, None))  # nothing measured: estimates
    assert w.line(100.0 + 3725) == "⠋ Working · 1h 02m · ↑ 6,704 ↓ 57 tokens · esc to interrupt"


def test_a_childs_activity_moves_the_line_too_and_big_counts_are_short() -> None:
    w = Working(started_at=0.0, interrupt="ctrl+c")
    w.apply(ChildActivity("child", "t1", TurnStarted(1, 48_000, False, 512)))
    w.apply(ChildActivity("child", "t1", ToolStarted("k1", "Read", "Read app.py")))
    assert w.line(75.0) == "⠋ Read app.py · 1m 15s · ↑ 48.0k ↓ 0 tokens · ctrl+c to interrupt"


def test_a_long_command_is_clipped_so_its_output_fits_after_it() -> None:
    w = Working(started_at=0.0)
    w.apply(ToolStarted("c1", "Bash", "Bash for i in $(seq 1 30); do echo collected $i; done"))
    assert w.line(9.0) == (
        "⠋ Bash for i in $(seq 1 30); do e… · 9s · ↑ 0 ↓ 0 tokens · esc to interrupt"
    )
