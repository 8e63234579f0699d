"""Recovery at open: every dangling call gets an explicit, truthful result."""

from __future__ import annotations

from pathlib import Path

from comal.agent.core.loop import run_turn
from comal.agent.core.recovery import recover
from comal.config import PermissionRule
from comal.messages import digest_bytes
from comal.session import open_calls
from tests.unit.recovery.conftest import (
    Bench,
    call,
    record_reply,
    record_started,
    result_text,
    results,
)


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


async def test_write_that_landed_is_credited_without_writing_again(bench: Bench) -> None:
    s, _ = bench.open()
    s.ledger.append(s.id, "message.user", {"message": {"role": "user", "parts": []}})
    write = call("c1", "Write", {"path": "out.txt", "content": "hello\n"})
    record_reply(s, write)
    await record_started(s, write, effect=True)
    target = bench.workspace / "out.txt"
    before = _stat(target)

    report = await recover(s)

    (result,) = results(s)
    assert result["status"] == "postcondition_observed"
    assert result["is_error"] is False
    observed = result["observed"]
    assert isinstance(observed, dict)
    assert observed["postcondition_observed"] is True
    assert observed["current_digest"] == digest_bytes(b"hello\n")
    text = result_text(s, "c1")
    assert text.startswith("postcondition_observed: true")
    # Neither claims the handler returned nor names who produced the bytes.
    for claim in ("returned", "succeeded", "Comal wrote", "was written by", "you wrote"):
        assert claim not in text
    assert _stat(target) == before
    assert target.read_bytes() == b"hello\n"
    assert [c.status for c in report.calls] == ["postcondition_observed"]
    assert report.continuation == "pending_calls"
    assert open_calls(s.ledger.entries(s.id)) == ()


async def test_write_killed_before_the_effect_stays_uncertain(bench: Bench) -> None:
    target = bench.workspace / "out.txt"
    target.write_text("old\n")
    s, _ = bench.open()
    write = call("c1", "Write", {"path": "out.txt", "content": "new\n"})
    record_reply(s, write)
    await record_started(s, write, effect=False)

    report = await recover(s)

    (result,) = results(s)
    assert result["status"] == "uncertain"
    assert result["is_error"] is True
    observed = result["observed"]
    assert isinstance(observed, dict)
    assert observed["postcondition_observed"] is False
    assert observed["current_digest"] == digest_bytes(b"old\n")
    assert "content before" in str(observed["detail"])
    assert target.read_text() == "old\n"  # never written by recovery
    assert report.held_uncertain == 1


async def test_a_different_file_stays_uncertain(bench: Bench) -> None:
    target = bench.workspace / "out.txt"
    target.write_text("old\n")
    s, _ = bench.open()
    edit = call(
        "c1", "Edit", {"path": "out.txt", "edits": [{"old_string": "old", "new_string": "new"}]}
    )
    record_reply(s, edit)
    await record_started(s, edit)
    target.write_text("someone else\n")

    await recover(s)

    (result,) = results(s)
    assert result["status"] == "uncertain"
    observed = result["observed"]
    assert isinstance(observed, dict)
    assert observed["current_digest"] == digest_bytes(b"someone else\n")
    assert "different content" in str(observed["detail"])
    assert target.read_text() == "someone else\n"


async def test_a_read_the_new_process_may_not_make_stays_uncertain(bench: Bench) -> None:
    s, _ = bench.open()
    write = call("c1", "Write", {"path": "secret.txt", "content": "x"})
    record_reply(s, write)
    await record_started(s, write, effect=True)
    bench.ledger.release_lock(s.id)
    # The resuming process runs with a rule that denies reading that file.
    bench.rules = (PermissionRule("deny", "Read", "secret.txt"),)
    resumed, _ = bench.open(session_id=s.id)

    await recover(resumed)

    (result,) = results(resumed)
    assert result["status"] == "uncertain"
    observed = result["observed"]
    assert isinstance(observed, dict)
    assert observed["readable"] is False
    assert "not allowed" in str(observed["detail"])


async def test_a_start_without_preparation_stays_uncertain(bench: Bench) -> None:
    s, _ = bench.open()
    write = call("c1", "Write", {"path": "out.txt", "content": "x"})
    record_reply(s, write)
    await record_started(s, write, prepare=False, effect=False)

    await recover(s)

    (result,) = results(s)
    assert result["status"] == "uncertain"
    assert "without a durable preparation" in result_text(s, "c1")
    assert not (bench.workspace / "out.txt").exists()


async def test_bash_has_no_adapter_and_is_never_run_again(bench: Bench) -> None:
    s, _ = bench.open()
    bash = call("c1", "Bash", {"command": "echo once >> log.txt"})
    record_reply(s, bash)
    await record_started(s, bash, effect=True)

    report = await recover(s)
    await recover(s)  # a second open finds nothing left to settle

    (result,) = results(s)
    assert result["status"] == "uncertain"
    assert "no recovery adapter" in result_text(s, "c1")
    assert (bench.workspace / "log.txt").read_text() == "once\n"
    assert [c.status for c in report.calls] == ["uncertain"]


async def test_a_call_that_never_started_runs_now(bench: Bench) -> None:
    s, _ = bench.open()
    first = call("c1", "Write", {"path": "a.txt", "content": "a"})
    second = call("c2", "Write", {"path": "b.txt", "content": "b"})
    record_reply(s, first, second)
    await record_started(s, first, effect=True)
    s.ledger.append(
        s.id,
        "tool.result",
        {"call_id": "c1", "name": "Write", "status": "ok", "is_error": False, "exit_code": None},
        body=b"Wrote 1 bytes",
    )

    report = await recover(s)

    assert [(c.call_id, c.status) for c in report.calls] == [("c2", "ran")]
    assert (bench.workspace / "b.txt").read_text() == "b"
    assert [r["status"] for r in results(s)] == ["ok", "ok"]
    assert report.continuation == "pending_calls"


async def test_a_denied_call_without_result_is_recorded_as_denied(bench: Bench) -> None:
    s, _ = bench.open()
    bash = call("c1", "Bash", {"command": "rm -rf /"})
    record_reply(s, bash)
    s.ledger.append(
        s.id,
        "tool.started",
        {
            "call_id": "c1",
            "name": "Bash",
            "arguments": bash.arguments,
            "permission": {"decision": "deny", "mode": "read-only", "reason": "read-only mode"},
        },
    )

    await recover(s)

    (result,) = results(s)
    assert result["status"] == "denied"
    assert "never ran" in result_text(s, "c1")


async def test_an_incomplete_response_at_the_tail_leaves_nothing_to_run(bench: Bench) -> None:
    s, provider = bench.open(["all done"])
    s.ledger.append(
        s.id,
        "message.user",
        {"message": {"role": "user", "parts": [{"type": "text", "text": "go"}]}},
    )
    s.ledger.append(
        s.id,
        "provider.request",
        {"sha256": "sha256:0", "size_bytes": 0, "estimated_input_tokens": 9},
    )
    s.ledger.append(
        s.id,
        "response.discarded",
        {
            "reason": "OUTPUT_LENGTH",
            "message": {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "call_id": "c9",
                        "name": "Write",
                        "arguments": {"path": "x.txt", "content": "half"},
                    }
                ],
            },
            "usage": {},
            "output_reserve": 10,
        },
    )
    s.ledger.append(
        s.id,
        "provider.request",
        {"sha256": "sha256:1", "size_bytes": 0, "estimated_input_tokens": 9},
    )

    report = await recover(s)

    assert report.calls == ()
    assert report.continuation == "awaiting_reply"
    assert s.ledger.entries(s.id, kinds=("tool.started",)) == []
    answer = await run_turn(s, None)
    assert answer == "all done"
    (request,) = provider.requests
    assert all(not m.tool_calls for m in request.messages)
    assert not (bench.workspace / "x.txt").exists()
