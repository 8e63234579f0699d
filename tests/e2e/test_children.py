"""Child sessions end to end: `comal -p` against the fake server scripting parent and children.

Each child's script is picked by a marker its task carries (`FakeServer(agents=…)`), so
parallel children get their own answers whatever order their requests arrive in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from comal.agent.children.run import RECEIPT_KIND, child_session_id
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import WIRES, configure, ledger_at
from tests.e2e.headless_support import comal_here as comal

pytestmark = pytest.mark.e2e


def task(call_id: str, marker: str, **extra: Any) -> dict[str, Any]:
    arguments = {"description": f"look {marker}", "prompt": f"{marker} find the greeting"}
    return {"id": call_id, "name": "Task", "arguments": arguments | extra}


def read(call_id: str, path: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "Read", "arguments": {"path": path}}]}


@pytest.mark.parametrize("wire", WIRES)
def test_a_task_round_trip_returns_the_childs_exact_receipt(
    wire: str, workspace: Path, home: Path
) -> None:
    (workspace / "hello.txt").write_text("hello from the file\n")
    answer = "The greeting is `hello from the file`.\n  (kept verbatim)"
    parent: list[Any] = [{"tool_calls": [task("t1", "[child-a]")]}, "The child found it."]
    agents: dict[str, list[Any]] = {"[child-a]": [read("a1", "hello.txt"), answer]}
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, wire)
        run = comal(
            "-p",
            "find the greeting",
            "--output-format",
            "stream-json",
            cwd=workspace,
            env_home=home,
        )
        assert run.code == 0, run.stderr
        stats = server.stats()
        assert stats.orphan_violations == 0
        assert stats.unexpected_requests == 0
        # The parent's second request carries the receipt; the child's requests never reach
        # the parent's window: its own first request holds only its task.
        child_first = next(r.body for r in server.received if "[child-a]" in str(r.body))
        assert "find the greeting" in str(child_first)
    parent_id = run.session_id()
    child_id = child_session_id(parent_id, "t1")
    with ledger_at(home) as ledger:
        info = ledger.session(child_id)
        assert info.parent_id == parent_id
        assert info.status == "finished"
        started: Any = ledger.entries(child_id, kinds=("session.started",))[0].payload
        assert started["origin"]["parent_call"] == "t1"
        (receipt,) = ledger.entries(child_id, kinds=(RECEIPT_KIND,))
        assert receipt.payload["answer"] == answer
        assert receipt.payload["status"] == "finished"
        results = ledger.entries(child_id, kinds=("tool.result",))
        evidence: Any = receipt.payload["evidence"]
        assert [r.id for r in results] == [e["ref"] for e in evidence]
        parent_result = next(
            e
            for e in ledger.entries(parent_id, kinds=("tool.result",))
            if e.payload["call_id"] == "t1"
        )
        body = (ledger.body(parent_result) or b"").decode()
        assert body.endswith("answer:\n" + answer)
        assert results[0].id in body
    tagged = [e for e in run.events() if e.get("type") == "child"]
    assert tagged
    assert all(e["session_id"] == child_id for e in tagged)
    assert {"child_started", "child_finished"} <= {str(e["type"]) for e in run.events()}


@pytest.mark.parametrize("wire", WIRES)
def test_parallel_task_calls_each_run_their_own_child(
    wire: str, workspace: Path, home: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    parent: list[Any] = [
        {"tool_calls": [task("p1", "[kid-1]"), task("p2", "[kid-2]"), task("p3", "[kid-3]")]},
        "All three answered.",
    ]
    agents: dict[str, list[Any]] = {
        "[kid-1]": [{**read("k1", "a.txt"), "delay_s": 0.05}, "one: alpha"],
        "[kid-2]": [read("k2", "b.txt"), "two: beta"],
        "[kid-3]": ["three: nothing to read"],
    }
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, wire)
        run = comal(
            "-p", "three looks", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr
        assert server.stats().orphan_violations == 0
        final = server.received[-1].body
    parent_id = run.session_id()
    with ledger_at(home) as ledger:
        children = ledger.children(parent_id)
        expected = [child_session_id(parent_id, c) for c in ("p1", "p2", "p3")]
        assert sorted(children) == sorted(expected)
        answers = {ledger.entries(c, kinds=(RECEIPT_KIND,))[0].payload["answer"] for c in children}
        assert answers == {"one: alpha", "two: beta", "three: nothing to read"}
        # Started together: every child started before the first one finished.
    events = [str(e["type"]) for e in run.events()]
    first_finished = events.index("child_finished")
    assert events[:first_finished].count("child_started") == 3
    # The parent's next request answers the three calls in call order.
    text = str(final)
    assert text.index("one: alpha") < text.index("two: beta") < text.index("three: nothing")


def test_a_child_over_budget_stops_with_a_receipt_saying_so(workspace: Path, home: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    parent: list[Any] = [
        {"tool_calls": [task("b1", "[busy]", max_turns=2)]},
        "The child ran out of budget.",
    ]
    agents: dict[str, list[Any]] = {"[busy]": [read(f"r{n}", "a.txt") for n in (1, 2, 3)]}
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, "anthropic-messages")
        run = comal("-p", "keep busy", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert server.stats().orphan_violations == 0
        assert server.stats().remaining_turns == 1  # the third child turn was never asked for
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        child = child_session_id(parent_id, "b1")
        (receipt,) = ledger.entries(child, kinds=(RECEIPT_KIND,))
        assert receipt.payload["status"] == "budget_exhausted"
        assert "--max-turns" in str(receipt.payload["reason"]) or "2 model calls" in str(
            receipt.payload["reason"]
        )
        result = next(
            e
            for e in ledger.entries(parent_id, kinds=("tool.result",))
            if e.payload["call_id"] == "b1"
        )
        assert result.payload["is_error"] is True
        assert "budget_exhausted" in (ledger.body(result) or b"").decode()
        # Stopped cleanly: every call the child made has its result.
        assert len(ledger.entries(child, kinds=("tool.result",))) == 2


def test_a_token_budget_stops_the_child_before_its_next_call(workspace: Path, home: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    parent: list[Any] = [{"tool_calls": [task("b1", "[tokens]", max_tokens=50)]}, "Out of tokens."]
    costly = {**read("r1", "a.txt"), "usage": {"input_tokens": 400}}
    agents: dict[str, list[Any]] = {"[tokens]": [costly, "never"]}
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, "openai-responses")
        run = comal("-p", "small budget", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert server.stats().remaining_turns == 1
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        (receipt,) = ledger.entries(child_session_id(parent_id, "b1"), kinds=(RECEIPT_KIND,))
        assert receipt.payload["status"] == "budget_exhausted"
        assert "50-token budget" in str(receipt.payload["reason"])


def board(*steps: tuple[str, str, str | None]) -> dict[str, Any]:
    items = [{"id": i, "text": t} | ({"check": c} if c else {}) for i, t, c in steps]
    return {"tool_calls": [{"id": "plan", "name": "Board", "arguments": {"set": items}}]}


def write(call_id: str, path: str, content: str) -> dict[str, Any]:
    arguments = {"path": path, "content": content}
    return {"tool_calls": [{"id": call_id, "name": "Write", "arguments": arguments}]}


def step(call_id: str, step_id: str, marker: str) -> dict[str, Any]:
    arguments = {"step": step_id, "prompt": marker}
    return {"tool_calls": [{"id": call_id, "name": "WorkStepRun", "arguments": arguments}]}


@pytest.mark.parametrize("wire", WIRES)
def test_work_step_run_whose_check_fails_keeps_the_step_open(
    wire: str, workspace: Path, home: Path
) -> None:
    parent: list[Any] = [
        board(
            ("greet", "greeting.txt says hello", "grep -qx hello greeting.txt"),
            ("bye", "bye.txt says bye", "grep -qx bye bye.txt"),
        ),
        step("s1", "greet", "[step-greet]"),
        step("s2", "bye", "[step-bye]"),
        "One step passed its check; greet is still open.",
    ]
    agents: dict[str, list[Any]] = {
        # The child claims success but writes the wrong text: the check decides.
        "[step-greet]": [write("g1", "greeting.txt", "helo\n"), "Done: greeting.txt says hello."],
        "[step-bye]": [write("b1", "bye.txt", "bye\n"), "Done: bye.txt says bye."],
    }
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, wire)
        run = comal("-p", "two steps", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert server.stats().orphan_violations == 0
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        criteria: Any = ledger.entries(parent_id, kinds=("board.updated",))[-1].payload["criteria"]
        assert {c["id"]: c["status"] for c in criteria} == {"greet": "in_progress", "bye": "done"}
        results = {
            e.payload["call_id"]: e for e in ledger.entries(parent_id, kinds=("tool.result",))
        }
        failed = (ledger.body(results["s1"]) or b"").decode()
        assert results["s1"].payload["is_error"] is True
        assert "The check failed; the step stays open." in failed
        assert "Done: greeting.txt says hello." in failed  # the claim is kept verbatim
        assert results["s2"].payload["is_error"] is False
    assert (workspace / "greeting.txt").read_text() == "helo\n"


def draft(call_id: str, path: str, *fragments: str) -> dict[str, Any]:
    plan = [{"id": f, "prompt": f"[frag-{f}] write the {f} section"} for f in fragments]
    arguments = {"path": path, "fragments": plan}
    return {"tool_calls": [{"id": call_id, "name": "WorkDraft", "arguments": arguments}]}


@pytest.mark.parametrize("wire", WIRES)
def test_a_work_draft_of_three_fragments_is_assembled_into_one_file(
    wire: str, workspace: Path, home: Path
) -> None:
    parent: list[Any] = [draft("d1", "doc.md", "intro", "body", "outro"), "doc.md is drafted."]
    agents: dict[str, list[Any]] = {
        "[frag-intro]": ["# Guide\n\nThis guide says hello."],
        "[frag-body]": [read("x1", "doc.md"), "## Body\n\nThe body, with `code`.\n"],
        "[frag-outro]": ["## End\n\nBye."],
    }
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, wire)
        run = comal("-p", "draft the guide", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert server.stats().orphan_violations == 0
    expected = (
        "# Guide\n\nThis guide says hello.\n\n## Body\n\nThe body, with `code`.\n\n## End\n\nBye.\n"
    )
    assert (workspace / "doc.md").read_text() == expected
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        assert len(ledger.children(parent_id)) == 3
        writes = [
            e
            for e in ledger.entries(parent_id, kinds=("tool.started",))
            if e.payload["name"] == "Write"
        ]
        (only,) = writes
        assert only.payload["call_id"] == "d1/write"
        assert "preparation" in only.payload  # the durable preparation came first
        result = next(
            e
            for e in ledger.entries(parent_id, kinds=("tool.result",))
            if e.payload["call_id"] == "d1"
        )
        assert result.payload["is_error"] is False


@pytest.mark.parametrize("wire", WIRES)
def test_a_call_id_reused_in_a_later_turn_runs_its_own_children_and_write(
    wire: str, workspace: Path, home: Path
) -> None:
    # Some servers number calls per response (`call_0` every turn): the second WorkDraft is a
    # new call, so it must not read back the first one's children or its recorded write, and
    # no request may carry one id twice.
    parent: list[Any] = [
        draft("call_0", "first.md", "one"),
        draft("call_0", "second.md", "two"),
        "both drafted.",
    ]
    agents: dict[str, list[Any]] = {
        "[frag-one]": ["# First\n\nThe first file."],
        "[frag-two]": ["# Second\n\nThe second file."],
    }
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, wire)
        run = comal("-p", "draft both", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
        assert server.stats().orphan_violations == 0
        last = str(server.received[-1].body)
    assert "call_0-1" in last  # the second use, as sent
    assert (workspace / "first.md").read_text() == "# First\n\nThe first file.\n"
    assert (workspace / "second.md").read_text() == "# Second\n\nThe second file.\n"
    with ledger_at(home) as ledger:
        (parent_id,) = [s.id for s in ledger.sessions() if s.parent_id is None]
        children = ledger.children(parent_id)
        assert len(children) == 2
        assert child_session_id(parent_id, "call_0", "one") in children  # the first use's id
        writes = [
            e.payload["call_id"]
            for e in ledger.entries(parent_id, kinds=("tool.started",))
            if e.payload["name"] == "Write"
        ]
        assert writes == ["call_0/write", "call_0/write/1"]
        results = [e.payload["call_id"] for e in ledger.entries(parent_id, kinds=("tool.result",))]
        assert results.count("call_0") == 2  # the ledger keeps the ids as the server sent them


@pytest.mark.parametrize("wire", WIRES)
def test_evidence_of_a_grandchild_or_an_unrelated_session_is_refused(
    wire: str, workspace: Path, home: Path
) -> None:
    (workspace / "deep.txt").write_text("deep secret\n")
    with FakeServer([read("u1", "deep.txt"), "read it"]) as server:
        configure(workspace, server, wire)
        assert comal("-p", "unrelated", cwd=workspace, env_home=home).code == 0
    with ledger_at(home) as ledger:
        (unrelated,) = [s.id for s in ledger.sessions()]
        (unrelated_ref,) = [e.id for e in ledger.entries(unrelated, kinds=("tool.result",))]
    grand = {
        "id": "c1",
        "name": "Task",
        "arguments": {"description": "go deeper", "prompt": "[grand] read deep.txt"},
    }
    parent: list[Any] = [
        {"tool_calls": [task("t1", "[child]", tools=["Task", "Read"])]},
        "The child delegated.",
    ]
    agents: dict[str, list[Any]] = {
        "[child]": [{"tool_calls": [grand]}, "My child read it."],
        "[grand]": [read("g1", "deep.txt"), "deep secret"],
    }
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, wire)
        run = comal(
            "-p", "delegate twice", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr
        parent_id = run.session_id()
        child = child_session_id(parent_id, "t1")
        grandchild = child_session_id(child, "c1")
        with ledger_at(home) as ledger:
            assert ledger.session(grandchild).parent_id == child
            (grand_ref,) = [e.id for e in ledger.entries(grandchild, kinds=("tool.result",))]
            child_ref = ledger.entries(child, kinds=("tool.result",))[0].id
        reads = [
            {"id": f"e{n}", "name": "EvidenceRead", "arguments": {"ref": ref}}
            for n, ref in enumerate((child_ref, grand_ref, unrelated_ref))
        ]
        server.add_turns({"tool_calls": reads}, "Only my child's evidence is readable.")
        again = comal(
            "--resume", parent_id, "-p", "read the evidence", cwd=workspace, env_home=home
        )
        assert again.code == 0, again.stderr
    with ledger_at(home) as ledger:
        results = {
            e.payload["call_id"]: e for e in ledger.entries(parent_id, kinds=("tool.result",))
        }
        assert results["e0"].payload["is_error"] is False
        for call_id, owner in (("e1", grandchild), ("e2", unrelated)):
            text = (ledger.body(results[call_id]) or b"").decode()
            assert results[call_id].payload["is_error"] is True
            assert f"belongs to session {owner}" in text
            assert "neither this session, one of its direct children" in text
            assert "deep secret" not in text


def test_people_see_the_tree_in_sessions_state_and_context(workspace: Path, home: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    parent: list[Any] = [
        {"tool_calls": [task("p1", "[one]"), task("p2", "[two]")]},
        "Both children answered.",
    ]
    agents: dict[str, list[Any]] = {
        "[one]": [read("o1", "a.txt"), "one says alpha"],
        "[two]": ["two says nothing"],
    }
    with FakeServer(parent, agents=agents) as server:
        configure(workspace, server, "openai-chat")
        run = comal(
            "-p", "two looks", "--output-format", "stream-json", cwd=workspace, env_home=home
        )
        assert run.code == 0, run.stderr
    parent_id = run.session_id()
    kids = [child_session_id(parent_id, c) for c in ("p1", "p2")]

    listing = comal("sessions", "--json", cwd=workspace, env_home=home)
    assert listing.code == 0, listing.stderr
    rows = [(row["id"], row["depth"]) for row in json.loads(listing.stdout)]
    top = rows.index((parent_id, 0))
    assert rows[top + 1 : top + 3] == [(kid, 1) for kid in kids]  # in the order they started
    plain = comal("sessions", cwd=workspace, env_home=home).stdout.splitlines()
    assert sum(line.startswith(" └─ ") for line in plain) == 2

    state = comal("state", parent_id, "--json", cwd=workspace, env_home=home)
    assert state.code == 0, state.stderr
    children = {c["id"]: c for c in json.loads(state.stdout)["children"]}
    assert set(children) == set(kids)
    for kid, call in zip(kids, ("p1", "p2"), strict=True):
        assert children[kid]["status"] == "finished"
        assert children[kid]["receipt"] == "finished"
        assert children[kid]["parent_call"] == call
        assert children[kid]["requests"] == (2 if call == "p1" else 1)
    assert "children: 2" in comal("state", parent_id, cwd=workspace, env_home=home).stdout

    context = comal("context", parent_id, "--json", cwd=workspace, env_home=home)
    assert context.code == 0, context.stderr
    receipts = json.loads(context.stdout)["child_receipts"]
    assert receipts["count"] == 2
    assert receipts["tokens"] > 0
