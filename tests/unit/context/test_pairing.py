"""One pairing rule: the view, the work state and `/state` pair calls and results alike.

Histories are generated with interleaved turns, call ids reused across turns (and within a
message), duplicated and orphaned results, starts without a result and superseded messages;
the pairing must equal a small reference model written here, and every reader must agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from comal.agent.features.state import recorded_calls
from comal.context.relief import workstate
from comal.context.relief.workstate import Call, collect_calls, describe_call, work_state
from comal.context.view.conversation import conversation_blocks
from comal.ledger.entry import Entry
from comal.ledger.store import Ledger
from comal.messages import JSONObject, Message, TextPart, ToolCallPart, message_to_json
from comal.session import open_calls, pair, tool_calls, uncertain_calls
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import make_engine

IDS = st.sampled_from(["c1", "c2", "c3"])  # few ids: providers reuse them across turns
TOOLS = st.sampled_from(["Read", "Edit", "Bash"])
STEP = st.one_of(
    st.tuples(st.just("message"), st.lists(st.tuples(IDS, TOOLS), max_size=3)),
    st.tuples(st.just("started"), IDS, TOOLS),
    st.tuples(st.just("result"), IDS, st.sampled_from(["ok", "uncertain"])),
    st.tuples(st.just("user")),
    st.tuples(st.just("discard"), st.integers(0, 5)),
)


def _arguments(tool: str, tag: str) -> JSONObject:
    """Arguments unique to one call (or one receipt), so equal calls mean the same call."""
    return {"command": f"make {tag}"} if tool == "Bash" else {"path": f"src/{tag}.py"}


@dataclass
class RefCall:
    """A call in the reference model: step indices of its message, receipt and result."""

    message: int | None
    call_id: str
    name: str
    arguments: JSONObject
    """Of the receipt when the call started (what ran), else the message's."""
    called_with: JSONObject
    """The arguments the message (or the bare receipt) gave."""
    started: int | None = None
    result: int | None = None


def reference(steps: list[tuple[object, ...]]) -> tuple[list[RefCall], list[int]]:
    """The rule, written as plainly as possible: (calls in record order, orphaned results)."""
    messages = [i for i, s in enumerate(steps) if s[0] == "message"]
    superseded = set()
    for i, step in enumerate(steps):
        prior = [m for m in messages if m < i]
        if step[0] == "discard" and prior:
            superseded.add(prior[int(str(step[1])) % len(prior)])
    calls: list[RefCall] = []
    orphans: list[int] = []
    for i, step in enumerate(steps):
        kind = step[0]
        if kind == "message" and i not in superseded:
            parts = step[1]
            assert isinstance(parts, list)
            for position, (call_id, tool) in enumerate(parts):
                arguments = _arguments(tool, f"m{i}_{position}")
                calls.append(RefCall(i, call_id, tool, arguments, arguments))
        if kind not in ("started", "result"):
            continue
        call_id = str(step[1])
        waiting = [c for c in calls if c.message is not None and c.call_id == call_id]
        waiting = [c for c in waiting if c.result is None]
        if waiting:
            newest = max(c.message or 0 for c in waiting)
            mine = [c for c in waiting if c.message == newest]
            if kind == "started":
                target = next((c for c in mine if c.started is None), mine[0])
                target.started = i
                target.name, target.arguments = str(step[2]), _arguments(str(step[2]), f"s{i}")
            else:
                mine[0].result = i
        elif kind == "started":
            tool = str(step[2])
            arguments = _arguments(tool, f"s{i}")
            calls.append(RefCall(None, call_id, tool, arguments, arguments, started=i))
        else:
            bare = [c for c in calls if c.message is None and c.call_id == call_id]
            bare = [c for c in bare if c.result is None]
            if bare:
                bare[-1].result = i
            else:
                orphans.append(i)
    return calls, orphans


def record(builder: SessionBuilder, steps: list[tuple[object, ...]]) -> dict[int, Entry]:
    """Append the steps; returns the entry of each step that appended one."""
    made: dict[int, Entry] = {}
    messages: list[int] = []
    for i, step in enumerate(steps):
        kind = step[0]
        if kind == "message":
            parts = step[1]
            assert isinstance(parts, list)
            calls = [
                ToolCallPart(call_id, tool, _arguments(tool, f"m{i}_{n}"))
                for n, (call_id, tool) in enumerate(parts)
            ]
            message = Message("assistant", (TextPart(f"turn {i}"), *calls))
            made[i] = builder.append("message.assistant", {"message": message_to_json(message)})
            messages.append(i)
        elif kind == "started":
            tool = str(step[2])
            payload: JSONObject = {
                "call_id": str(step[1]),
                "name": tool,
                "arguments": _arguments(tool, f"s{i}"),
            }
            made[i] = builder.append("tool.started", payload)
        elif kind == "result":
            made[i] = builder.result(str(step[1]), "Bash", f"out {i}", status=str(step[2]))
        elif kind == "user":
            made[i] = builder.user(f"go on {i}")
        elif messages:
            target = made[messages[int(str(step[1])) % len(messages)]]
            payload = {"reason": "OUTPUT_LENGTH", "message": {}, "entry": target.id}
            made[i] = builder.append("response.discarded", payload)
    return made


def _described(call: RefCall | None) -> str:
    """How the work state describes a result's call (an orphan: by its result's tool name)."""
    return describe_call(call.name, call.arguments) if call else describe_call("Bash", {})


def _expected_call(ref: RefCall, made: dict[int, Entry]) -> Call:
    started = made[ref.started] if ref.started is not None else None
    return Call(ref.call_id, ref.name, ref.arguments, started)


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=30))
def test_every_reader_pairs_by_the_one_rule(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[object, ...]]
) -> None:
    path = tmp_path_factory.mktemp("pairing") / "ledger.db"
    with Ledger.open(path, durable=False) as ledger:
        builder = SessionBuilder(ledger)
        made = record(builder, steps)
        entries = ledger.entries(builder.session_id)
        calls, orphans = reference(steps)
        pairing = pair(entries)

        # The pairing module equals the reference model.
        got = [
            (
                site.message.id if site.message else None,
                site.call.call_id,
                site.started.id if site.started else None,
                site.result.id if site.result else None,
            )
            for site in pairing.sites
        ]
        want = [
            (
                made[c.message].id if c.message is not None else None,
                c.call_id,
                made[c.started].id if c.started is not None else None,
                made[c.result].id if c.result is not None else None,
            )
            for c in calls
        ]
        assert got == want
        assert [e.id for e in pairing.orphans] == [made[i].id for i in orphans]

        # A result answers at most one call, recorded before it; a call has at most one result.
        answered = [site.result for site in pairing.sites if site.result is not None]
        assert len({r.id for r in answered}) == len(answered)
        assert not {r.id for r in answered} & {o.id for o in pairing.orphans}
        results = [e for e in entries if e.kind == "tool.result"]
        assert len(answered) + len(pairing.orphans) == len(results)
        for site in pairing.sites:
            opened = site.message or site.started
            assert opened is not None
            if site.result is not None:
                assert opened.seq < site.result.seq
                assert site.started is None or site.started.seq < site.result.seq

        # The view: each block carries the results of its own calls, in call order, and sends
        # each call and its result under one id no other call of the view uses.
        sent_ids: list[str] = []
        for block in conversation_blocks(entries):
            if block.role != "assistant":
                continue
            mine = [c for c in calls if c.message is not None and made[c.message] == block.entry]
            assert [r.entry.id for r in block.results] == [
                made[c.result].id for c in mine if c.result is not None
            ]
            assert block.missing == tuple(c.call_id for c in mine if c.result is None)
            sent = [call.call_id for call in block.message.tool_calls]
            assert [r.call_id for r in block.results] == [
                sent[i] for i, c in enumerate(mine) if c.result is not None
            ]
            assert [i.split("-")[0] for i in sent] == [c.call_id for c in mine]
            sent_ids += sent
        assert len(sent_ids) == len(set(sent_ids))

        # The work state reads each result against the same call.
        workstate._FOLDS.clear()
        workstate._STATES.clear()
        assert dict(collect_calls(entries)) == {
            made[c.result].id: _expected_call(c, made) for c in calls if c.result is not None
        }
        by_result = {made[c.result].id: c for c in calls if c.result is not None}
        ordinal_of = {e.id: n for n, e in enumerate(results, start=1)}
        uncertain = [
            f"{_described(c)} · E{ordinal_of[e.id]}: uncertain, not re-run"
            for e in results
            if e.payload.get("status") == "uncertain"
            for c in [by_result.get(e.id)]
        ]
        started = [
            f"{describe_call(c.name, c.arguments)}: started, no result recorded"
            for c in calls
            if c.started is not None and c.result is None
        ]
        expected = [*uncertain, *started][-workstate.MAX_PENDING :]
        assert [line.text for line in work_state(entries, ledger).pending] == expected

        # `/state` and recovery: open calls, and the arguments a result's receipt recorded.
        assert [(o.call.call_id, o.call.arguments, o.started) for o in open_calls(entries)] == [
            (c.call_id, c.called_with, made[c.started] if c.started is not None else None)
            for c in calls
            if c.message is not None and c.result is None
        ]

        def ran(entry: Entry) -> JSONObject:
            c = by_result.get(entry.id)
            return c.arguments if c is not None and c.started is not None else {}

        assert [r.arguments for r in recorded_calls(entries)] == [ran(e) for e in results]
        assert [u.arguments for u in uncertain_calls(entries)] == [
            ran(e) for e in results if e.payload.get("status") == "uncertain"
        ]


def test_a_checkpoint_names_the_call_the_view_pairs_when_ids_are_reused(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    """A provider reuses `call_0` every turn: the first turn reads a.py, the second edits b.py.

    The view pairs each result with its own turn; the work state used to read every result
    against the latest call with its id, so its checkpoint said b.py was edited by the read
    of a.py and never named a.py.
    """
    builder.user("Read a.py, then fix b.py.")
    read = ToolCallPart("call_0", "Read", {"path": "a.py"})
    edit = ToolCallPart("call_0", "Edit", {"path": "b.py", "old": "x", "new": "y"})
    results = []
    for call, output in ((read, "contents of a.py"), (edit, "edited b.py")):
        message = Message("assistant", (TextPart(f"{call.name} next."), call))
        builder.append("message.assistant", {"message": message_to_json(message)})
        builder.append(
            "tool.started", {"call_id": "call_0", "name": call.name, "arguments": call.arguments}
        )
        results.append(builder.result("call_0", call.name, output))
    for i in range(6):
        builder.turn(f"Step {i}.", [("Bash", {"command": f"grep -rn part{i} src"}, "x\n" * 400, 0)])
    first, edited = results

    blocks = conversation_blocks(ledger.entries(builder.session_id))
    paired = {
        str(b.message.tool_calls[0].arguments["path"]): b.results[0].entry for b in blocks[1:3]
    }
    assert paired == {"a.py": first, "b.py": edited}

    checkpoint = make_engine(ledger, builder.session_id).compact(by="user")
    assert checkpoint.tail_from_seq > edited.seq  # both turns are summarised
    work = checkpoint.text.split("## Work state", 1)[1]
    lines = {
        line.split(":", 1)[0].lstrip("- "): line for line in work.splitlines() if ".py:" in line
    }
    assert sorted(lines) == ["a.py", "b.py"]
    # Each line names its own result, by ordinal: the first and the second output.
    ordinals = [e.id for e in ledger.entries(builder.session_id) if e.kind == "tool.result"]
    assert lines["a.py"].endswith(f" · E{ordinals.index(first.id) + 1}")
    assert lines["a.py"].split(": ", 1)[1].startswith("read · ")
    assert lines["b.py"].endswith(f" · E{ordinals.index(edited.id) + 1}")
    assert lines["b.py"].split(": ", 1)[1].startswith("edited · ")


def test_an_assistant_message_is_parsed_from_its_own_payload_object() -> None:
    def entry(call_id: str) -> Entry:
        message = Message("assistant", (ToolCallPart(call_id, "Read", {"path": "a.py"}),))
        payload: JSONObject = {"message": message_to_json(message)}
        return Entry(1, "evt_same_id", "s", "message.assistant", payload, "sha256:x", 0)

    first, other = entry("c1"), entry("c2")
    assert [c.call_id for c in tool_calls(first)] == ["c1"]
    assert tool_calls(first) == tool_calls(first)
    # Same id, another payload object (another ledger holding that id): its own message.
    assert [c.call_id for c in tool_calls(other)] == ["c2"]
    assert [c.call_id for c in tool_calls(first)] == ["c1"]
