"""Tool calls a model wrote as text: taken as calls when they are exactly that, else a notice.

Small local models (Qwen2.5-Coder-0.5B under llama-server, SmolLM2) often write a tool call in
their reply's text instead of the wire's `tool_calls`: a bare JSON object `{"name": …,
"arguments": …}`, the same in a fenced code block, or their chat template's `<tool_call>` tags
left in the content. Such a reply used to end the turn as an answer that did nothing.

The rule, kept deliberately narrow so prose is never run:
- only a reply with text and no wire tool call is read, and never a refused one;
- the text must *be* the call: the whole reply is one or more bare JSON objects (only
  whitespace between them, as Qwen2.5-Coder writes one call per line), or one or more fenced
  blocks (an optional lead-in sentence before the first, nothing after the last), or one or more
  `<tool_call>` blocks (a lead-in allowed, the last closing tag may be missing: templates end
  the reply on it);
- each object names a tool by `name` (or `function.name`) and gives `arguments` (or
  `parameters`) as an object or a JSON string of one;
- every call names an offered tool and its arguments pass that tool's schema. Then the calls
  replace the text in the recorded message (the lead-in stays as text) and the record keeps the
  original text (`AssistantMessage.recovered`). Otherwise nothing runs and the answer stands,
  with a notice saying why — never a silent empty success.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from comal.ids import new_id
from comal.messages import JSONObject, JSONValue, Message, Part, TextPart, ToolCallPart, ToolSpec
from comal.providers.reply import Reply
from comal.tools.schema import validate_arguments

RECOVERED_CODE = "TOOL_CALL_FROM_TEXT"
"""The notice shown (and warning recorded) when a text call was taken as a call."""
UNUSABLE_CODE = "TOOL_CALL_AS_TEXT"
"""The notice when the reply looked like a tool call but could not be run."""
EMPTY_CODE = "EMPTY_REPLY"
"""The notice when a finished reply held neither text nor a call."""

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|tool_call|tool_code)?[ \t]*\n(.*?)\n?[ \t]*```", re.S)
_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)


@dataclass(frozen=True, slots=True)
class TextCall:
    """One call as written: the tool's name and its arguments (any JSON, checked later)."""

    name: str
    arguments: JSONValue


@dataclass(frozen=True, slots=True)
class TextCalls:
    """What a reply's text held: its form (`json`, `fenced`, `tag`), the lead-in prose before
    the first call (stripped, possibly empty) and the calls in order."""

    form: str
    lead: str
    calls: tuple[TextCall, ...]


def parse_text_calls(text: str) -> TextCalls | None:
    """The tool calls `text` consists of, or None when it is not (only) tool calls.

    Args:
        text: the reply's whole text.

    Returns:
        The calls with their form, or None: prose, a JSON value that is not a call, an
        unclosed fence, or text after the last call.
    """
    stripped = text.strip()
    if not stripped:
        return None
    if "<tool_call>" in stripped:
        return _blocks(stripped, _TAG, "tag")
    if stripped.startswith("{"):
        calls = [_call(body) for body in _json_objects(stripped)]
        if not calls or None in calls:
            return None
        return TextCalls("json", "", tuple(c for c in calls if c is not None))
    if "```" in stripped:
        return _blocks(stripped, _FENCE, "fenced")
    return None


def _json_objects(text: str) -> list[str]:
    """The JSON values `text` is made of, one after another with only whitespace between;
    empty when anything else is there."""
    decoder = json.JSONDecoder()
    bodies: list[str] = []
    at = 0
    while at < len(text):
        try:
            _, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return []
        bodies.append(text[at:end])
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    return bodies


def _blocks(text: str, pattern: re.Pattern[str], form: str) -> TextCalls | None:
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    between = [text[a.end() : b.start()] for a, b in pairwise(matches)]
    if text[matches[-1].end() :].strip() or any(gap.strip() for gap in between):
        return None
    calls: list[TextCall] = []
    for match in matches:
        call = _call(match.group(1).strip())
        if call is None:
            return None
        calls.append(call)
    return TextCalls(form, text[: matches[0].start()].strip(), tuple(calls))


def _call(body: str) -> TextCall | None:
    try:
        value: JSONValue = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    function = value.get("function")
    if isinstance(function, dict) and "name" in function:
        value = function
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return None
    keys = set(value) - {"name", "type", "id"}
    if not keys <= {"arguments", "parameters"}:
        return None  # an object with a `name` among other fields is data, not a call
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        # A string that does not parse is kept as it is: reported as not an object.
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments) if arguments.strip() else {}
    return TextCall(name, arguments)


@dataclass(frozen=True, slots=True)
class Taken:
    """The outcome for one reply: the reply to record (its message holding the calls when
    they were taken), the `recovered` payload of its record, and the notice to show."""

    reply: Reply
    recovered: JSONObject | None = None
    notice: tuple[str, str] | None = None


def take_text_calls(reply: Reply, offered: Sequence[ToolSpec]) -> Taken:
    """Apply the rule of this module to a finished reply.

    Args:
        reply: the model's reply, as decoded from the wire.
        offered: the tools the request offered.
    """
    message = reply.message
    if reply.refused or message.tool_calls:
        return Taken(reply)
    text = message.text
    if not text.strip():
        return Taken(reply, notice=(EMPTY_CODE, "the model's reply held no text and no call"))
    found = parse_text_calls(text)
    if found is None:
        return Taken(reply)
    specs = {spec.name: spec for spec in offered}
    names = ", ".join(c.name for c in found.calls)
    for call in found.calls:
        problem = _problem(call, specs)
        if problem is not None:
            return Taken(
                reply,
                notice=(
                    UNUSABLE_CODE,
                    f"the model wrote a tool call as text ({_FORMS[found.form]}) that was not"
                    f" run: {problem}",
                ),
            )
    parts: list[Part] = [p for p in message.parts if not isinstance(p, TextPart)]
    if found.lead:
        parts.append(TextPart(found.lead))
    for call in found.calls:
        assert isinstance(call.arguments, dict)  # checked by _problem
        parts.append(ToolCallPart(new_id("call"), call.name, call.arguments))
    recovered: JSONObject = {"from": "text", "form": found.form, "text": text}
    notice = f"took the model's text ({_FORMS[found.form]}) as a call to {names}"
    return Taken(
        replace(reply, message=Message("assistant", tuple(parts))),
        recovered,
        (RECOVERED_CODE, notice),
    )


_FORMS = {"json": "bare JSON", "fenced": "fenced JSON", "tag": "<tool_call> tags"}


def _problem(call: TextCall, specs: dict[str, ToolSpec]) -> str | None:
    spec = specs.get(call.name)
    if spec is None:
        offered = ", ".join(sorted(specs)) or "none"
        return f"{call.name!r} is not an offered tool (offered: {offered})"
    if not isinstance(call.arguments, dict):
        return f"the arguments of {call.name} are not a JSON object"
    return validate_arguments(spec, call.arguments)
