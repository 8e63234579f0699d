"""Generated recorded sessions for the replay's property tests: tool outputs that introduce
identifiers, replies that write some of them back later (the facts `facts.py` tracks)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from comal.importers.plan import ParsedSession, SessionPlan
from comal.messages import TextPart, ToolCallPart
from comal.replay.transcript import Transcript, transcript_from
from comal.usage import Usage


@dataclass(frozen=True, slots=True)
class Step:
    """One call: the reply's text (naming earlier facts) and the output its call returns."""

    uses: tuple[int, ...]
    """Facts of earlier steps the reply writes: `u` names identifier `u % 2` of step `u // 2`."""
    lines: int
    """Filler lines of the output (its size)."""


def _ident(step: int, n: int) -> str:
    return f"value_{step}_{n}_k"


def output_text(step: int, lines: int) -> str:
    """An output that introduces two identifiers of its own among `lines` of filler."""
    filler = "".join(f"row {i} of table {step}: nothing to see here\n" for i in range(lines))
    return f"{_ident(step, 0)} = 1\n{filler}{_ident(step, 1)} = 2\n"


def build(steps: list[Step]) -> Transcript:
    """A session: a task, then per step a reply (writing the facts it uses) with one call and
    its output, then a last reply using the facts of the last step."""
    plan = SessionPlan(Path("generated.json"), "openai-chat")
    plan.user_text("Survey the tables.")
    for number, step in enumerate(steps):
        named = " ".join(_ident(u // 2, u % 2) for u in step.uses if u // 2 < number)
        call = ToolCallPart(f"c{number}", "bash", {"command": f"dump {number}"})
        text = TextPart(f"Next I dump table {number}. {named}".strip())
        plan.assistant(
            (text, call), model="m", finish="tool_calls", usage=Usage(output=40), usage_raw=None
        )
        plan.tool_result(f"c{number}", output_text(number, step.lines).encode(), line=None)
    last = " ".join(_ident(len(steps) - 1, n) for n in range(2))
    plan.assistant(
        (TextPart(f"Done: {last}"),), model="m", finish="stop", usage=Usage(output=20),
        usage_raw=None,
    )  # fmt: skip
    parsed = ParsedSession(
        "generated", "generated.json", "generated", "", "", "m", "You read tables.", plan.done()
    )
    return transcript_from(parsed)


@st.composite
def step_lists(draw: st.DrawFn, max_steps: int = 16) -> list[Step]:
    """The steps of a generated session (`build` makes it): 3 … `max_steps` calls with outputs
    of 1 … 400 filler lines (drawn as steps, so a failing case prints small)."""
    count = draw(st.integers(3, max_steps))
    steps = []
    for number in range(count):
        uses = draw(st.lists(st.integers(0, 2 * number - 1), max_size=3)) if number else []
        lines = draw(st.sampled_from([1, 5, 40, 150, 400]))
        steps.append(Step(tuple(uses), lines))
    return steps
