"""The view: conversation shape, result rendering, previews, determinism, invariants."""

from __future__ import annotations

import pytest

from comal.errors import InvariantError
from comal.evidence.read import read_evidence
from comal.ledger.records import ToolResult
from comal.ledger.store import Ledger
from comal.messages import TextPart, ToolResultPart
from comal.testing.sessions import SessionBuilder
from tests.unit.context.conftest import make_engine


def test_results_follow_their_call_in_call_order(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.user("list files")
    builder.turn(
        "Looking.",
        [
            ("Bash", {"command": "ls"}, "a.py\nb.py\n", 0),
            ("Bash", {"command": "false"}, "", 1),
        ],
    )
    builder.answer("Two files.")
    view = make_engine(ledger, builder.session_id).prepare()
    roles = [m.role for m in view.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    results = view.messages[2].tool_results
    assert [r.call_id for r in results] == ["call_1", "call_2"]
    assert results[0].content == "a.py\nb.py\n"
    assert results[1].content == "(no output)\n[exit code: 1]"
    assert results[1].is_error
    assert view.actions == ()


def test_an_output_that_states_its_exit_code_gets_no_trailer_repeating_it(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    # An imported observation (mini-swe-agent's <returncode>) already says how the command
    # exited, as the agent's model saw it: the view sends it as it was, where Comal's own
    # command output, which does not say it, gets the trailer.
    observation = "<returncode>1</returncode>\n<output>\nno such file\n</output>"
    builder.user("find the bug")
    _, (said, plain) = builder.assistant("Looking.", [("bash", {"command": "cat x"})] * 2)
    imported = ToolResult.for_output(
        said, "bash", observation.encode(), status="ok", is_error=False, exit_code=1,
        exit_code_in_output=True,
    )  # fmt: skip
    builder.write(imported, body=observation.encode())
    builder.result(plain, "bash", "no such file\n", exit_code=1)
    view = make_engine(ledger, builder.session_id).prepare()
    first, second = view.messages[-1].tool_results
    assert first.content == observation
    assert second.content == "no such file\n[exit code: 1]"
    # The reference a projection would show still names the exit code in its header.
    engine = make_engine(ledger, builder.session_id)
    (item,) = [r for b in engine.conversation() for r in b.results if r.call_id == said]
    assert "exit 1" in engine.texts().text(item, "ref").splitlines()[0]
    assert "[exit code" not in engine.texts().text(item, "ref")


def test_user_text_after_results_merges_into_one_user_message(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("go")
    builder.turn("", [("Bash", {"command": "ls"}, "x", 0)])
    builder.user("also check y")
    view = make_engine(ledger, builder.session_id).prepare()
    last = view.messages[-1]
    assert last.role == "user"
    assert isinstance(last.parts[0], ToolResultPart)
    assert last.parts[1] == TextPart("also check y")


def test_large_output_enters_as_preview_with_exact_next_call(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("dump")
    big = "\n".join(f"line {i:05d} " + "x" * 60 for i in range(2_000))
    (result,) = builder.turn("", [("Bash", {"command": "cat big"}, big, 0)])
    view = make_engine(ledger, builder.session_id, window=32_768).prepare()
    content = view.messages[-1].tool_results[0].content
    assert content.startswith(f"[ref {result.id} · Bash · {len(big):,} bytes · exit 0")
    assert "line 00000" in content
    assert "line 01999" in content
    assert len(content) < 8_000
    # The elision note names the exact call that continues where the head stops.
    marker = '{"offset":'
    offset = int(content.split(marker, 1)[1].split(",", 1)[0])
    page = read_evidence(ledger, builder.session_id, result.id, offset=offset, limit=200)
    head_end = content.split("\n[…", 1)[0]
    assert big[: len(head_end.split("\n", 1)[1])] == big[:offset].rstrip("\n")
    assert page.text == big[offset : offset + 200]


def _log_with_a_traceback_in_the_middle() -> tuple[str, list[str]]:
    noise = [
        f"src/mod{i % 40}.py:{i}:0: C0103: name does not conform (invalid-name)" for i in range(900)
    ]
    trace = [
        "Traceback (most recent call last):",
        '  File "/repo/lint/runner.py", line 661, in check_all_files',
        "    self.check_one(parse_tree, visit_module, path)",
        '  File "/repo/lint/walker.py", line 92, in visit_module',
        "    callback(node)",
        "KeyError: 'format_spec_field'",
    ]
    lines = noise[:450] + trace + noise[450:]
    return "\n".join(lines) + "\n", trace


def test_a_preview_shows_the_lines_of_note_its_head_and_tail_leave_out(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("lint")
    log, trace = _log_with_a_traceback_in_the_middle()
    (result,) = builder.turn("", [("Bash", {"command": "lint ."}, log, 1)])
    # The seed's fixed ceiling: at 128k the window's share would take this log whole.
    ceiling = {"large_output_threshold_bytes": 20 * 1024}
    view = make_engine(ledger, builder.session_id, window=128_000, **ceiling).prepare()
    content = view.messages[-1].tool_results[0].content
    assert content.startswith(f"[ref {result.id} · Bash · {len(log):,} bytes · exit 1")
    note = content.split("[lines of note in the part not shown, by line number:]\n", 1)[1]
    note = note.split("\n[end of lines of note]", 1)[0]
    shown = dict(line.split("| ", 1) for line in note.splitlines())
    # Every traceback line, the code under each frame included, under its real line number.
    source = log.splitlines()
    for line in trace:
        number = source.index(line) + 1
        assert shown[str(number)] == line
    # Each shown line is the original line of that number.
    assert all(source[int(n) - 1] == text for n, text in shown.items())
    # The preview keeps its size: the lines of note come out of the head's share.
    plain = "\n".join(f"plain line {i:05d} " + "y" * 60 for i in range(900)) + "\n"
    builder.turn("", [("Bash", {"command": "cat plain"}, plain, 0)])
    view = make_engine(ledger, builder.session_id, window=128_000, **ceiling).prepare()
    without = view.messages[-1].tool_results[0].content
    assert "[lines of note" not in without
    assert abs(len(content) - len(without)) < 2_000
    assert len(content) < 18_000


def test_same_ledger_gives_byte_identical_views(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.user("go")
    for i in range(5):
        builder.turn(f"step {i}", [("Bash", {"command": f"echo {i}"}, f"out {i}\n" * 50, 0)])
    first = make_engine(ledger, builder.session_id).prepare()
    second = make_engine(ledger, builder.session_id).view()
    assert first.messages == second.messages
    assert first.system == second.system
    assert first.estimated_tokens == second.estimated_tokens


def test_a_call_without_result_is_an_invariant_error(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("go")
    builder.assistant("", [("Bash", {"command": "sleep 100"})])
    engine = make_engine(ledger, builder.session_id)
    with pytest.raises(InvariantError, match="call_1"):
        engine.prepare()
    # Reports still work on such a session (nothing is patched, nothing raised).
    assert engine.report().used_tokens > 0


def test_anchor_measured_base_plus_estimate(ledger: Ledger, builder: SessionBuilder) -> None:
    from comal.usage import Usage

    builder.user("go")
    engine = make_engine(ledger, builder.session_id)
    view = engine.prepare()
    assert not view.measured_base
    request = builder.request(engine.fingerprint.to_json(), view.estimated_tokens)
    builder.assistant(
        "", [("Bash", {"command": "ls"})], usage=Usage(900, 100, 0, 20), request=request
    )
    builder.result("call_1", "Bash", "a\nb\n")
    after = engine.prepare()
    assert after.measured_base
    assert 1_000 < after.estimated_tokens < 1_100
    report = engine.report()
    assert report.used_measured
    assert "measured 1,000" in report.anchor
    # A different tool catalog invalidates the anchor.
    from comal.context.engine import ContextEngine, FixedParts

    other = ContextEngine(
        ledger, builder.session_id, engine.settings, FixedParts("x", "", ()), model="gpt-4o"
    )
    assert not other.view().measured_base


def test_media_by_reference_for_a_model_without_vision(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("screenshot")
    _, ids = builder.assistant("", [("Screenshot", {})])
    payload = {
        "call_id": ids[0],
        "name": "Screenshot",
        "status": "ok",
        "is_error": False,
        "exit_code": None,
        "size_bytes": 2,
        "digest": "sha256:x",
        "media": [{"media_type": "image/png", "data_b64": "aGVsbG8="}],
    }
    entry = builder.append("tool.result", payload, body=b"ok")  # type: ignore[arg-type]
    blind = make_engine(ledger, builder.session_id).prepare()
    result = blind.messages[-1].tool_results[0]
    assert result.media == ()
    assert f"image/png · 6 bytes · kept by reference in {entry.id}" in result.content
    assert "pixels were not seen" in result.content
    seeing = make_engine(ledger, builder.session_id, vision=True).prepare()
    assert seeing.messages[-1].tool_results[0].media[0].data_b64 == "aGVsbG8="


def test_imported_peer_summary_is_marked_user_text(ledger: Ledger, builder: SessionBuilder) -> None:
    builder.append("message.summary", {"text": "Earlier: fixed a.py", "origin": "claude-code"})
    builder.user("continue")
    view = make_engine(ledger, builder.session_id).prepare()
    assert view.messages[0].role == "user"
    assert view.messages[0].parts[0] == TextPart(
        "[summary recorded by claude-code]\nEarlier: fixed a.py"
    )


def test_lines_of_note_are_taken_by_class_within_the_budget() -> None:
    from comal.context.view.rendering import notable_lines

    lines = [
        "plain text",
        "src/app.py:12: mentioned here",
        "def parse_header(raw):",
        "    return raw",
        "FAILED tests/test_app.py::test_header - assert 1 == 2",
        "ValueError: bad header",
        "plain text",
        "ValueError: bad header",
    ]
    # Everything of note fits: in line order, each repeat once, plain lines never.
    everything = notable_lines(lines, 10_000)
    assert [i for i, _ in everything] == [1, 2, 4, 5]
    # A budget for two lines: the exception, then the failure line, before the outline.
    two = sum(len(lines[i]) + 8 for i in (4, 5))
    assert [i for i, _ in notable_lines(lines, two)] == [4, 5]
    # One more line's room goes to the definition, not the path mention.
    three = two + len(lines[2]) + 8
    assert [i for i, _ in notable_lines(lines, three)] == [2, 4, 5]
