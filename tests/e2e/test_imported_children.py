"""Imported Claude Code sub-agents resume as real children (`comal --resume PARENT -p`).

The recordings are the shared Claude Code sessions with sub-agents: 2.1 (sub-agent files beside
the transcript) and 1.0 (sidechains inside it). Each test writes, in its own temporary folder,
the recording as it stood when Claude Code stopped while its sub-agent ran: the parent's
transcript up to (not including) the `Task` result, and the sub-agent's transcript either cut
after one of its calls (the child was mid-step) or whole (the child had answered, the parent
never got the result). Imported, the parent's `Task` call is open with its
`tool.started` receipt, as a Comal coordinator stopped mid-call; resuming rebuilds it from the
child exactly as a native child: an unfinished child resumes by the rules of any session (its
interrupted call stays uncertain, never re-run), an answered child is read back without a model
call, the child ends with its `child.receipt`, the parent's result is that receipt, and a
second resume repeats nothing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from comal.importers.plan import IMPORTED_MODE, INTERRUPTED_TEXT
from comal.ledger import Entry, Ledger
from comal.messages import message_from_json
from comal.session import RECEIPT_KIND, open_calls
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import Run, configure, ledger_at, start
from tests.e2e.headless_support import comal_here as comal
from tests.unit.importers.conftest import trajectory

pytestmark = pytest.mark.e2e

RECORDINGS = (
    "claude-code-2_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "claude-code-2_spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "claude-code_vsla/0a725fb5-6378-432a-9e84-9f3f49d4043d.jsonl",
)
IDS = ["2.x-4d5611e5", "2.x-ae4a77f8", "1.x-0a725fb5"]
CHILD_ANSWER = "Resumed child: the exploration is complete.\n  (kept verbatim)"
PARENT_ANSWER = "The sub-agent's report is in; continuing from it."


@dataclass(frozen=True, slots=True)
class Recording:
    """A recorded parent transcript and the sub-agent its `Task` call ran: a 2.x sub-agent file
    beside it (`agent`), or (1.x) a sidechain inside it."""

    path: Path
    lines: list[str]
    result_line: int
    """Index of the line holding the `Task` call's result."""
    call_id: str
    prompt: str
    agent: str | None
    """The 2.x sub-agent id; None: a 1.x sidechain of the same file."""
    returned: str
    """The sub-agent's answer as the parent received it (the result's first text block)."""

    @property
    def agent_file(self) -> Path:
        return self.path.parent / self.path.stem / "subagents" / f"agent-{self.agent}.jsonl"

    @property
    def marker(self) -> str:
        """Text of the child's first user message (the Task prompt) that routes its requests:
        the fake server looks for it in that message as JSON, so no character needing an escape."""
        head = self.prompt.splitlines()[0][:48]
        assert json.dumps(head, ensure_ascii=False)[1:-1] == head
        return head


def _content(record: dict[str, Any]) -> list[dict[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _agent_of(path: Path, texts: list[str]) -> str | None:
    """The 2.x sub-agent a result names (`agentId: …`) whose file is present."""
    for text in texts:
        if "agentId: " in text:
            agent = text.split("agentId: ")[1].split()[0]
            if (path.parent / path.stem / "subagents" / f"agent-{agent}.jsonl").is_file():
                return agent
    return None


def recording(relative: str) -> Recording:
    """The recording's first `Task` call that ran a sub-agent, and its result line."""
    path = trajectory(relative)
    lines = path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) if line.strip() else {} for line in lines]
    tasks = {
        b["id"]: str(b["input"]["prompt"])
        for r in records
        if not r.get("isSidechain")
        for b in _content(r)
        if b.get("type") == "tool_use" and b.get("name") == "Task"
    }
    sidechain_asks = {
        r["message"]["content"]
        for r in records
        if r.get("isSidechain") and r.get("parentUuid") is None
        if isinstance(r.get("message", {}).get("content"), str)
    }
    for index, record in enumerate(records):
        for block in _content(record):
            call = str(block.get("tool_use_id"))
            if block.get("type") != "tool_result" or call not in tasks:
                continue
            texts = [str(t.get("text", "")) for t in block["content"] if isinstance(t, dict)]
            agent = _agent_of(path, texts)
            if agent is not None or tasks[call] in sidechain_asks:
                return Recording(path, lines, index, call, tasks[call], agent, texts[0])
    raise AssertionError(f"{relative}: no Task call whose sub-agent is recorded")


def _cut_mid_step(lines: list[str], indices: list[int]) -> tuple[int, str]:
    """(line index, call id) of the sub-agent's last call in the first half of its lines
    (`indices`): cut after it, the child stopped mid-step."""
    for index in reversed(indices[: len(indices) // 2]):
        record = json.loads(lines[index])
        calls = [str(b["id"]) for b in _content(record) if b.get("type") == "tool_use"]
        if record.get("type") == "assistant" and calls:
            return index, calls[-1]
    raise AssertionError("no sub-agent call in the first half of its transcript")


def stopped_copy(rec: Recording, where: Path, *, child_answered: bool) -> tuple[Path, str | None]:
    """The recording as it stood when Claude Code stopped during the sub-agent's run, written
    under `where`: (parent file, the sub-agent call left without a result, if any)."""
    where.mkdir(parents=True)
    parent = where / rec.path.name
    kept = rec.lines[: rec.result_line]
    cut_call = None
    if rec.agent is None:  # 1.x: the sidechain's records are in the parent's file
        if not child_answered:
            own = [
                i
                for i, line in enumerate(kept)
                if line.strip() and json.loads(line).get("isSidechain")
            ]
            end, cut_call = _cut_mid_step(kept, own)
            kept = kept[: end + 1]
        parent.write_text("\n".join(kept) + "\n", encoding="utf-8")
        return parent, cut_call
    parent.write_text("\n".join(kept) + "\n", encoding="utf-8")
    agent_lines = rec.agent_file.read_text(encoding="utf-8").splitlines()
    if not child_answered:
        indices = [i for i, line in enumerate(agent_lines) if line.strip()]
        end, cut_call = _cut_mid_step(agent_lines, indices)
        agent_lines = agent_lines[: end + 1]
    folder = where / rec.path.stem / "subagents"
    folder.mkdir(parents=True)
    (folder / rec.agent_file.name).write_text("\n".join(agent_lines) + "\n", encoding="utf-8")
    return parent, cut_call


def import_tree(parent: Path, workspace: Path, home: Path) -> tuple[str, str]:
    """`comal import` the stopped recording: (parent id, child id)."""
    run = comal("import", "--json", str(parent), cwd=workspace, env_home=home)
    assert run.code == 0, run.stderr
    sessions = json.loads(run.stdout)["sessions"]
    (top,) = [s for s in sessions if s["parent_id"] is None]
    (child,) = [s for s in sessions if s["parent_id"] == top["id"]]
    return str(top["id"]), str(child["id"])


def resume(parent_id: str, workspace: Path, home: Path) -> Run:
    # The recording's own folder does not exist here: the resume moves it (`--cwd`).
    return comal(
        "--resume",
        parent_id,
        "--cwd",
        str(workspace),
        "-p",
        "--output-format",
        "stream-json",
        cwd=workspace,
        env_home=home,
        timeout=240,
    )


def _results(entries: list[Entry], call_id: str) -> list[Entry]:
    return [e for e in entries if e.kind == "tool.result" and e.payload["call_id"] == call_id]


def _snapshot(ledger: Ledger, session_id: str) -> list[tuple[str, str]]:
    return [(e.id, e.content_hash) for e in ledger.entries(session_id)]


def _assert_imported_open(home: Path, rec: Recording, parent_id: str, child_id: str) -> None:
    """The import leaves the Task call open with its receipt, linked to the child."""
    with ledger_at(home) as ledger:
        (open_call,) = open_calls(ledger.entries(parent_id))
        assert open_call.call.call_id == rec.call_id
        assert open_call.call.name == "Task"
        assert open_call.started is not None
        permission: Any = open_call.started.payload["permission"]
        assert permission["decision"] == "allow"
        assert permission["mode"] == IMPORTED_MODE
        origin: Any = ledger.entries(child_id, kinds=("session.started",))[0].payload["origin"]
        assert origin["parent_call"] == rec.call_id
        assert ledger.entries(child_id, kinds=(RECEIPT_KIND,)) == []


def _assert_rebuilt(
    home: Path, rec: Recording, parent_id: str, child_id: str, answer: str
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The child ended with its exact receipt and the parent's result is that receipt."""
    with ledger_at(home) as ledger:
        assert ledger.session(child_id).status == "finished"
        child_entries = ledger.entries(child_id)
        (receipt,) = [e for e in child_entries if e.kind == RECEIPT_KIND]
        assert child_entries[-1] == receipt
        assert receipt.payload["answer"] == answer
        assert receipt.payload["status"] == "finished"
        assert receipt.payload["call_id"] == rec.call_id
        evidence: Any = receipt.payload["evidence"]
        results = [e for e in child_entries if e.kind == "tool.result"]
        assert [e["ref"] for e in evidence] == [r.id for r in results]
        parent_entries = ledger.entries(parent_id)
        (result,) = _results(parent_entries, rec.call_id)
        assert result.payload["status"] == "ok"
        body = (ledger.body(result) or b"").decode()
        assert body.startswith(f"child {child_id} · finished")
        assert body.endswith("answer:\n" + answer)
        assert open_calls(parent_entries) == ()
        for sid in (parent_id, child_id):
            assert ledger.verify(sid).ok
        return _snapshot(ledger, parent_id), _snapshot(ledger, child_id)


def _assert_nothing_repeated(
    home: Path,
    workspace: Path,
    parent_id: str,
    child_id: str,
    before: tuple[list[tuple[str, str]], list[tuple[str, str]]],
) -> None:
    """A second resume makes no model call, runs no child and records nothing in the child."""
    with FakeServer([]) as server:
        configure(workspace, server, "anthropic-messages")
        again = resume(parent_id, workspace, home)
        assert again.code == 0, again.stderr
        assert server.stats().requests == 0
    assert "NOTHING_TO_CONTINUE" in {str(e.get("code")) for e in again.events()}
    assert not [e for e in again.events() if e.get("type") == "child_started"]
    with ledger_at(home) as ledger:
        assert _snapshot(ledger, child_id) == before[1]
        parent_now = _snapshot(ledger, parent_id)
        assert parent_now[: len(before[0])] == before[0]


@pytest.mark.parametrize("relative", RECORDINGS, ids=IDS)
def test_a_sub_agent_stopped_mid_step_resumes_as_a_real_child(
    relative: str, tmp_path: Path, workspace: Path, home: Path
) -> None:
    rec = recording(relative)
    parent_file, cut_call = stopped_copy(rec, tmp_path / "recorded", child_answered=False)
    assert cut_call is not None
    parent_id, child_id = import_tree(parent_file, workspace, home)
    _assert_imported_open(home, rec, parent_id, child_id)
    with ledger_at(home) as ledger:
        (interrupted,) = _results(ledger.entries(child_id), cut_call)
        assert interrupted.payload["status"] == "uncertain"

    agents = {rec.marker: [CHILD_ANSWER]}
    with FakeServer([PARENT_ANSWER], agents=agents) as server:
        configure(workspace, server, "anthropic-messages")
        run = resume(parent_id, workspace, home)
        assert run.code == 0, run.stderr
        stats = server.stats()
        assert stats.orphan_violations == 0
        assert stats.unexpected_requests == 0
        assert stats.requests == 2  # the child's one step, then the parent's
        child_request, parent_request = (str(r.body) for r in server.received)
    # The child's request carries its own conversation, its interrupted call uncertain; the
    # parent's next request carries the receipt.
    assert INTERRUPTED_TEXT in child_request
    assert CHILD_ANSWER.splitlines()[0] in parent_request
    finished = [e for e in run.events() if e.get("type") == "finished"]
    assert finished[-1]["answer"] == PARENT_ANSWER
    child_events = [e for e in run.events() if e.get("type") == "child"]
    assert child_events
    assert all(e["session_id"] == child_id for e in child_events)

    before = _assert_rebuilt(home, rec, parent_id, child_id, CHILD_ANSWER)
    with ledger_at(home) as ledger:
        child_entries = ledger.entries(child_id)
        # The interrupted call was never run again: one result, no new start of any call.
        assert len(_results(child_entries, cut_call)) == 1
        assert not [e for e in child_entries if e.kind == "tool.started"]
        assert len([e for e in child_entries if e.kind == "message.user"]) == 1

    listing = comal("sessions", "--json", cwd=workspace, env_home=home)
    rows = [(row["id"], row["depth"]) for row in json.loads(listing.stdout)]
    assert rows[rows.index((parent_id, 0)) + 1] == (child_id, 1)
    plain = comal("sessions", cwd=workspace, env_home=home).stdout.splitlines()
    assert len(plain) == 3  # header, parent, child: one line each
    state = comal("state", parent_id, "--json", cwd=workspace, env_home=home)
    (listed,) = json.loads(state.stdout)["children"]
    assert (listed["status"], listed["receipt"], listed["parent_call"]) == (
        "finished",
        "finished",
        rec.call_id,
    )
    _assert_nothing_repeated(home, workspace, parent_id, child_id, before)


@pytest.mark.parametrize("relative", RECORDINGS, ids=IDS)
def test_a_sub_agent_that_answered_is_read_back_without_a_model_call(
    relative: str, tmp_path: Path, workspace: Path, home: Path
) -> None:
    rec = recording(relative)
    parent_file, _ = stopped_copy(rec, tmp_path / "recorded", child_answered=True)
    parent_id, child_id = import_tree(parent_file, workspace, home)
    _assert_imported_open(home, rec, parent_id, child_id)

    with FakeServer([PARENT_ANSWER], agents={rec.marker: []}) as server:
        configure(workspace, server, "openai-chat")
        run = resume(parent_id, workspace, home)
        assert run.code == 0, run.stderr
        stats = server.stats()
        assert stats.requests == 1  # the parent's only: the child is not run again
        assert stats.orphan_violations == 0
        assert stats.unexpected_requests == 0
        (parent_request,) = (str(r.body) for r in server.received)
    # The receipt's answer is the sub-agent's last answer verbatim: exactly what Claude Code
    # handed the parent when the sub-agent finished.
    before = _assert_rebuilt(home, rec, parent_id, child_id, rec.returned)
    assert json.dumps(rec.returned)[1:-1][:200] in parent_request
    with ledger_at(home) as ledger:
        assert ledger.session(child_id).status == "finished"
        child_entries = ledger.entries(child_id)
        assert not [e for e in child_entries if e.kind in ("provider.request", "tool.started")]
        last = next(e for e in reversed(child_entries) if e.kind == "message.assistant")
        message: Any = last.payload["message"]
        assert message_from_json(message).text == rec.returned
    _assert_nothing_repeated(home, workspace, parent_id, child_id, before)


def _wait_for_request(proc: subprocess.Popen[bytes], home: Path, child_id: str) -> bool:
    """Poll the ledger until the child records a model request; False if the run ended."""
    deadline = time.monotonic() + 120
    with Ledger.open(home / "ledger.db") as ledger:
        while proc.poll() is None and time.monotonic() < deadline:
            if ledger.entries(child_id, kinds=("provider.request",)):
                return True
            time.sleep(0.01)
    return False


@pytest.mark.slow
def test_a_resume_killed_inside_the_imported_child_resumes_again_exactly(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    rec = recording(RECORDINGS[1])
    parent_file, cut_call = stopped_copy(rec, tmp_path / "recorded", child_answered=False)
    parent_id, child_id = import_tree(parent_file, workspace, home)
    slow = {"text": CHILD_ANSWER, "delay_s": 0.05, "chunk_chars": 2}
    agents = {rec.marker: [slow]}
    # `answered`: the request re-sent after the kill gets the same scripted turn again.
    with FakeServer([PARENT_ANSWER], agents=agents, turn_by="answered") as server:
        configure(workspace, server, "anthropic-messages")
        args = ["--resume", parent_id, "--cwd", str(workspace), "-p"]
        proc = start(*args, cwd=workspace, env_home=home, stderr=subprocess.DEVNULL)
        try:
            assert _wait_for_request(proc, home, child_id)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        with ledger_at(home) as ledger:
            assert ledger.entries(child_id, kinds=(RECEIPT_KIND,)) == []
            assert len(open_calls(ledger.entries(parent_id))) == 1  # still the Task call
        run = resume(parent_id, workspace, home)
        assert run.code == 0, run.stderr
        stats = server.stats()
        assert stats.orphan_violations == 0
        assert stats.unexpected_requests == 0
    before = _assert_rebuilt(home, rec, parent_id, child_id, CHILD_ANSWER)
    with ledger_at(home) as ledger:
        child_entries = ledger.entries(child_id)
        assert cut_call is not None
        assert len(_results(child_entries, cut_call)) == 1
        assert len([e for e in child_entries if e.kind == "message.user"]) == 1
        texts = [
            message_from_json(e.payload["message"]).text  # type: ignore[arg-type]
            for e in child_entries
            if e.kind == "message.assistant"
        ]
        assert texts.count(CHILD_ANSWER) == 1
    _assert_nothing_repeated(home, workspace, parent_id, child_id, before)
