"""The work state extended entry by entry equals the work state read from the start."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from comal.context.relief import workstate
from comal.context.relief.workstate import Call, WorkState, collect_calls, work_state
from comal.context.view.conversation import ConversationIndex
from comal.ledger.entry import Entry
from comal.ledger.store import Ledger
from comal.messages import JSONObject, Message, TextPart, ToolCallPart, message_to_json
from comal.testing.sessions import SessionBuilder

IDS = st.sampled_from(["c1", "c2", "c3"])  # few ids: providers reuse them across turns
TOOLS = st.sampled_from(["Read", "Edit", "Write", "Bash"])
STEP = st.one_of(
    st.tuples(st.just("call"), IDS, TOOLS, st.integers(0, 3)),
    st.tuples(st.just("started"), IDS, TOOLS, st.integers(0, 3)),
    st.tuples(
        st.just("result"), IDS, st.sampled_from(["ok", "uncertain", "error"]), st.integers(0, 2)
    ),
    st.tuples(
        st.just("board"), st.just(""), st.sampled_from(["todo", "in_progress"]), st.integers(0, 0)
    ),
)


def _arguments(tool: str, n: int) -> JSONObject:
    if tool == "Bash":
        return {"command": f"make test{n}"}
    return {"path": f"src/f{n}.py"}


def _append(builder: SessionBuilder, step: tuple[str, str, str, int]) -> None:
    kind, call_id, what, n = step
    if kind == "call":
        message = Message(
            "assistant", (TextPart("go"), ToolCallPart(call_id, what, _arguments(what, n)))
        )
        builder.append("message.assistant", {"message": message_to_json(message)})
    elif kind == "started":
        builder.append(
            "tool.started", {"call_id": call_id, "name": what, "arguments": _arguments(what, n)}
        )
    elif kind == "result":
        failed = what == "error"
        builder.result(
            call_id,
            "Bash",
            f"out {n}\nError: boom {n}\n" if failed else f"ok {n}",
            exit_code=n if failed else 0,
            is_error=failed,
            status="uncertain" if what == "uncertain" else "ok",
        )
    else:
        builder.board([("c1", "the feature works", what)])


def _fresh(entries: list[Entry], ledger: Ledger) -> tuple[WorkState, dict[str, Call]]:
    workstate._FOLDS.clear()
    workstate._STATES.clear()
    return work_state(entries, ledger), dict(collect_calls(entries))


@settings(max_examples=80, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=25), st.integers(1, 3))
def test_extended_work_state_equals_a_fresh_read(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, str, int]], every: int
) -> None:
    path = tmp_path_factory.mktemp("ws") / "ledger.db"
    with Ledger.open(path, durable=False) as ledger:
        builder = SessionBuilder(ledger)
        _fresh(ledger.entries(builder.session_id), ledger)
        for n, step in enumerate(steps):
            _append(builder, step)
            if n % every:
                continue
            entries = ledger.entries(builder.session_id)
            # The memo holds the fold of an earlier prefix: this extends it.
            extended = (work_state(entries, ledger), dict(collect_calls(entries)))
            assert extended == _fresh(entries, ledger)


def _lent(entries: list[Entry], ledger: Ledger) -> tuple[WorkState, dict[str, Call]]:
    """The work state read with a conversation index's pairing lent (memos empty)."""
    workstate._FOLDS.clear()
    workstate._STATES.clear()
    index = ConversationIndex().extend(entries)
    assert index.pairing_of(entries) is not None
    state = work_state(entries, ledger, index)
    workstate._FOLDS.clear()
    workstate._STATES.clear()
    return state, dict(collect_calls(entries, index))


@settings(max_examples=80, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=25), st.booleans())
def test_a_lent_pairing_gives_the_work_state_of_a_fresh_read(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, str, int]], discard: bool
) -> None:
    path = tmp_path_factory.mktemp("lent") / "ledger.db"
    with Ledger.open(path, durable=False) as ledger:
        builder = SessionBuilder(ledger)
        for step in steps:
            _append(builder, step)
        entries = ledger.entries(builder.session_id)
        messages = [e for e in entries if e.kind == "message.assistant"]
        if discard and messages:
            # A superseded message re-pairs everything: the lent pairing must have done so too.
            builder.append("response.discarded", {"entry": messages[0].id, "reason": "test"})
            entries = ledger.entries(builder.session_id)
        assert _lent(entries, ledger) == _fresh(entries, ledger)


def test_an_index_of_other_entries_lends_nothing(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "ledger.db", durable=False) as ledger:
        builder = SessionBuilder(ledger)
        _append(builder, ("call", "c1", "Read", 1))
        _append(builder, ("result", "c1", "ok", 1))
        entries = ledger.entries(builder.session_id)
        index = ConversationIndex().extend(entries[:-1])
        assert index.pairing_of(entries) is None
        assert index.pairing_of(entries[:-1]) is not None
        # Not lent, the work state is read as without an index: the result is paired.
        workstate._FOLDS.clear()
        workstate._STATES.clear()
        assert entries[-1].id in collect_calls(entries, index)
