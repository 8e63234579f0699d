"""The incremental pair check raises exactly what the whole check raises, view after view."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from comal.context.view.invariants import PairChecker, check_pairs
from comal.errors import InvariantError
from comal.messages import Message, TextPart, ToolCallPart, ToolResultPart

IDS = st.sampled_from(["c1", "c2", "c3", "c4"])
ASSISTANT = st.builds(
    lambda calls: Message(
        "assistant", (TextPart("ok"), *(ToolCallPart(c, "Bash", {}) for c in calls))
    ),
    st.lists(IDS, max_size=2),
)
USER = st.builds(
    lambda results, text: Message(
        "user",
        (*(ToolResultPart(c, "Bash", "out") for c in results), *([TextPart("go")] if text else [])),
    ),
    st.lists(IDS, max_size=2),
    st.booleans(),
)
MESSAGE = st.one_of(ASSISTANT, USER)


def _outcome(check: object, messages: tuple[Message, ...]) -> str:
    try:
        check(messages)  # type: ignore[operator]
    except InvariantError as exc:
        return str(exc)
    return "ok"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(MESSAGE, min_size=1, max_size=6),
    st.lists(st.tuples(st.sampled_from(["append", "replace_last", "drop_last"]), MESSAGE)),
)
def test_incremental_check_raises_what_the_whole_check_raises(
    start: list[Message], steps: list[tuple[str, Message]]
) -> None:
    checker = PairChecker()
    view = list(start)
    assert _outcome(checker.check, tuple(view)) == _outcome(check_pairs, tuple(view))
    for how, message in steps:
        if how == "append":
            view.append(message)
        elif how == "replace_last":
            view[-1] = message
        elif len(view) > 1:
            view.pop()
        assert _outcome(checker.check, tuple(view)) == _outcome(check_pairs, tuple(view))
