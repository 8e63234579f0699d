"""Tool calls written as text, in the forms small local models write them: parsed exactly,
taken only when they name an offered tool with valid arguments, otherwise left as text with a
notice. Then in the loop: the call runs, the record keeps the text it came from."""

from __future__ import annotations

from comal.agent.core.events import Notice
from comal.agent.core.loop import run_turn
from comal.agent.core.text_calls import (
    EMPTY_CODE,
    RECOVERED_CODE,
    UNUSABLE_CODE,
    TextCall,
    TextCalls,
    parse_text_calls,
    take_text_calls,
)
from comal.ledger.records import AssistantMessage, WarningRecord
from comal.messages import Finish, Message, TextPart, ToolCallPart, ToolResultPart
from comal.providers.reply import Reply
from comal.providers.scripted import ScriptedTurn
from comal.tools.native import default_tools
from comal.usage import Usage
from tests.unit.recovery.conftest import Bench

OFFERED = tuple(t.spec for t in default_tools())

# Replies as Qwen2.5-Coder-0.5B-Instruct and SmolLM2 wrote them under llama-server.
QWEN_FENCED = """```json
{
  "name": "Bash",
  "arguments": {
    "command": "python -m pytest -q"
  }
}
```"""
QWEN_LEAD_FENCED = """To see what the notes say, I will read the file.

```json
{"name": "Read", "arguments": {"path": "notes.txt"}}
```"""
QWEN_TAGS = """<tool_call>
{"name": "Read", "arguments": {"path": "notes.txt"}}
</tool_call>
<tool_call>
{"name": "Glob", "arguments": {"pattern": "**/*.py"}}
</tool_call>"""
TAG_UNCLOSED = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n'
LLAMA_PARAMETERS = '{"name": "Glob", "parameters": {"pattern": "*.txt"}}'
STRING_ARGUMENTS = '{"name": "Bash", "arguments": "{\\"command\\": \\"ls -la\\"}"}'
OPENAI_SHAPE = '{"type": "function", "function": {"name": "Read", "arguments": {"path": "a.py"}}}'
# Qwen2.5-Coder-0.5B under llama-server, after a call's result: one bare call per line.
QWEN_LINES = (
    '{"name": "Read", "arguments": {"path": "notes.txt"}}\n'
    '{"name": "Glob", "arguments": {"pattern": "*.txt"}}'
)


def test_the_forms_small_models_write_are_parsed_with_their_form_and_lead_in() -> None:
    assert parse_text_calls(QWEN_FENCED) == TextCalls(
        "fenced", "", (TextCall("Bash", {"command": "python -m pytest -q"}),)
    )
    assert parse_text_calls(QWEN_LEAD_FENCED) == TextCalls(
        "fenced",
        "To see what the notes say, I will read the file.",
        (TextCall("Read", {"path": "notes.txt"}),),
    )
    assert parse_text_calls(QWEN_TAGS) == TextCalls(
        "tag",
        "",
        (TextCall("Read", {"path": "notes.txt"}), TextCall("Glob", {"pattern": "**/*.py"})),
    )
    assert parse_text_calls(TAG_UNCLOSED) == TextCalls(
        "tag", "", (TextCall("Bash", {"command": "ls"}),)
    )
    assert parse_text_calls(LLAMA_PARAMETERS) == TextCalls(
        "json", "", (TextCall("Glob", {"pattern": "*.txt"}),)
    )
    assert parse_text_calls(STRING_ARGUMENTS) == TextCalls(
        "json", "", (TextCall("Bash", {"command": "ls -la"}),)
    )
    assert parse_text_calls(OPENAI_SHAPE) == TextCalls(
        "json", "", (TextCall("Read", {"path": "a.py"}),)
    )
    assert parse_text_calls(QWEN_LINES) == TextCalls(
        "json",
        "",
        (TextCall("Read", {"path": "notes.txt"}), TextCall("Glob", {"pattern": "*.txt"})),
    )


def test_prose_data_and_examples_are_not_calls() -> None:
    not_calls = [
        "The tests pass.",
        "",
        '{"name": "Ada", "age": 36}',  # data with a name, not a call
        '[{"name": "Bash", "arguments": {"command": "ls"}}]',
        # A call shown as an example, followed by an explanation: an answer, not a call.
        '```json\n{"name": "Bash", "arguments": {"command": "ls"}}\n```\nThis lists the files.',
        "```python\nprint('hi')\n```",
        '```json\n{"name": "Bash", "arguments": {"command": "ls"}',  # unclosed fence
        "<tool_call>\nnot json\n</tool_call>",
        '{"name": "Bash", "arguments": {"command": "ls"}} and then read the file',
        '{"name": "Bash", "arguments": {"command": "ls"}}\n{"name": "Ada", "age": 36}',
        '{"name": "Bash", "arguments": {"command": "ls"}}\n{"name": "Read", "argu',
    ]
    assert [parse_text_calls(text) for text in not_calls] == [None] * len(not_calls)


def reply(text: str, *parts: ToolCallPart) -> Reply:
    message = Message("assistant", (TextPart(text), *parts))
    return Reply(message, Finish.STOP, "stop", Usage(), {})


def test_a_valid_call_replaces_the_text_and_keeps_the_lead_in_as_text() -> None:
    taken = take_text_calls(reply(QWEN_LEAD_FENCED), OFFERED)
    (part_text, part_call) = taken.reply.message.parts
    assert part_text == TextPart("To see what the notes say, I will read the file.")
    assert isinstance(part_call, ToolCallPart)
    assert (part_call.name, part_call.arguments, part_call.call_id.startswith("call_")) == (
        "Read",
        {"path": "notes.txt"},
        True,
    )
    assert taken.recovered == {"from": "text", "form": "fenced", "text": QWEN_LEAD_FENCED}
    assert taken.notice == (
        RECOVERED_CODE,
        "took the model's text (fenced JSON) as a call to Read",
    )


def test_an_unknown_tool_or_invalid_arguments_leave_the_text_with_a_notice() -> None:
    unknown = take_text_calls(reply('{"name": "shell", "arguments": {"cmd": "ls"}}'), OFFERED)
    assert unknown.reply.message.tool_calls == ()
    assert unknown.recovered is None
    assert unknown.notice == (
        UNUSABLE_CODE,
        "the model wrote a tool call as text (bare JSON) that was not run: 'shell' is not an"
        " offered tool (offered: Bash, Edit, Glob, Grep, Read, Write)",
    )
    invalid = take_text_calls(reply('<tool_call>{"name": "Read", "arguments": {}}'), OFFERED)
    assert invalid.notice == (
        UNUSABLE_CODE,
        "the model wrote a tool call as text (<tool_call> tags) that was not run: invalid"
        " arguments for Read: arguments.path is required",
    )
    # One bad call of two: none runs.
    two = QWEN_TAGS.replace('"Glob"', '"Find"')
    assert take_text_calls(reply(two), OFFERED).reply.message.tool_calls == ()


def test_an_empty_reply_is_never_a_silent_success_and_wire_calls_are_left_alone() -> None:
    assert take_text_calls(reply("  \n"), OFFERED).notice == (
        EMPTY_CODE,
        "the model's reply held no text and no call",
    )
    wire = ToolCallPart("c1", "Bash", {"command": "ls"})
    with_call = reply(QWEN_FENCED, wire)
    assert take_text_calls(with_call, OFFERED).reply is with_call
    assert take_text_calls(with_call, OFFERED).notice is None


async def test_a_fenced_call_runs_and_its_record_keeps_the_text(bench: Bench) -> None:
    (bench.workspace / "notes.txt").write_text("remember the milk\n")
    s, provider = bench.open([ScriptedTurn(text=QWEN_LEAD_FENCED), "Remember the milk."])
    assert await run_turn(s, "what do my notes say?") == "Remember the milk."
    entries = list(bench.ledger.entries(s.id))
    first = next(AssistantMessage.from_entry(e) for e in entries if e.kind == "message.assistant")
    assert first.recovered == {"from": "text", "form": "fenced", "text": QWEN_LEAD_FENCED}
    (result,) = [p for m in provider.requests[1].messages for p in m.tool_results]
    assert (result.is_error, "remember the milk" in result.content) == (False, True)
    warnings = [WarningRecord.from_entry(e) for e in entries if e.kind == "warning"]
    notices = [(n.code, n.message) for n in bench.events if isinstance(n, Notice)]
    recovered = (RECOVERED_CODE, "took the model's text (fenced JSON) as a call to Read")
    assert [(w.code, w.message) for w in warnings] == [recovered]
    assert recovered in notices
    assert isinstance(result, ToolResultPart)
