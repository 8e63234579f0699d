"""What the fake server checks on every request, per wire, and how it sizes a request.

Invariants (the harness must never break them; each break is a counted violation):
- system instructions come first (Chat/Responses system or developer messages only at the
  start; no `system` role inside Anthropic `messages`);
- every tool call has exactly one result, placed right after the assistant turn that made it
  (Chat: in the `tool` messages that follow; Anthropic: in the next user message; Responses:
  after the call, before the next user message);
- no result without its call, and no call id used twice.
- Chat: an assistant message's `content` is never an explicit null (llama-cpp-python's
  validation answers it with HTTP 500; `""` is what every server takes).
- Anthropic: a `tool_use` id and a `tool_result`'s `tool_use_id` match `^[a-zA-Z0-9_-]+$`
  (the Messages API refuses any other with a 400, "String should match pattern").

Request size: the o200k token count (toktok) of every text the request carries (instructions,
message text, tool results, tool-call arguments, tool schemas), plus 4 tokens per message.
Other facts read from a request: the tool calls it answers and the output limit it asks for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import toktok

from comal.messages import JSONObject, JSONValue

TokenEstimator = Callable[[JSONObject], int]

_SKIP_KEYS = {
    "model",
    "role",
    "type",
    "id",
    "call_id",
    "tool_call_id",
    "tool_use_id",
    "signature",
    "encrypted_content",
    "data",
    "image_url",
    "source",
    "media_type",
    "cache_control",
    "stream",
    "stream_options",
    "include",
    "store",
    "truncation",
    "status",
}


def _strings(value: JSONValue) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key == "tools" or key == "parameters" or key == "input_schema":
                yield json.dumps(item, sort_keys=True)
            elif key not in _SKIP_KEYS:
                yield from _strings(item)


def request_texts(body: JSONObject) -> list[str]:
    """Every text a request body carries (see the module docstring)."""
    return [s for s in _strings(body) if s]


def count_request_tokens(body: JSONObject) -> int:
    """The default estimator: o200k count of the request's texts, 4 tokens per message."""
    texts = request_texts(body)
    counts: list[int] = toktok.batch_count(texts, "o200k_base") if texts else []
    items = body.get("messages", body.get("input"))
    per_message = 4 * len(items) if isinstance(items, list) else 0
    return sum(counts) + per_message


def count_text_tokens(text: str) -> int:
    """o200k count of one text (used for scripted output sizes)."""
    if not text:
        return 0
    counts: list[int] = toktok.batch_count([text], "o200k_base")
    return counts[0]


_RESULT_ID_KEYS = ("tool_call_id", "tool_use_id", "call_id")


def answered_call_ids(value: JSONValue) -> set[str]:
    """Ids of the tool results a request carries (Chat `tool_call_id`, Anthropic `tool_use_id`,
    Responses `function_call_output.call_id`)."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= answered_call_ids(item)
    elif isinstance(value, dict):
        is_result = value.get("role") == "tool" or value.get("type") in (
            "tool_result",
            "function_call_output",
        )
        for key, item in value.items():
            if is_result and key in _RESULT_ID_KEYS and isinstance(item, str):
                found.add(item)
            elif isinstance(item, list | dict):
                found |= answered_call_ids(item)
    return found


def requested_output_tokens(body: JSONObject) -> int:
    """The output limit the request asks for (`max_tokens` and its variants; 0 when none)."""
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int):
            return value
    return 0


def _list(value: JSONValue) -> list[JSONValue]:
    return value if isinstance(value, list) else []


def _dict(value: JSONValue) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _duplicates(ids: list[str]) -> list[str]:
    seen: set[str] = set()
    dup = []
    for call_id in ids:
        if call_id in seen:
            dup.append(call_id)
        seen.add(call_id)
    return dup


def _late_system_messages(items: list[JSONObject], where: str) -> list[str]:
    """System or developer messages after the first other item (`where` formats the index)."""
    problems: list[str] = []
    started = False
    for i, item in enumerate(items):
        if item.get("role") in ("system", "developer"):
            if started:
                problems.append(f"{where.format(i)}: system message after the conversation started")
        else:
            started = True
    return problems


def check_chat(body: JSONObject) -> list[str]:
    """Violations in a Chat Completions request."""
    messages = [_dict(m) for m in _list(body.get("messages"))]
    problems = _late_system_messages(messages, "messages.[{}]")
    all_ids: list[str] = []
    pending: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id in pending:
                pending.remove(call_id)
            else:
                problems.append(
                    f"messages.[{i}]: tool message {call_id} does not answer a call of the"
                    " preceding assistant message"
                )
            continue
        if pending:
            problems.append(
                "An assistant message with 'tool_calls' must be followed by tool messages"
                " responding to each 'tool_call_id'. The following tool_call_ids did not have"
                f" response messages: {', '.join(pending)}"
            )
            pending = []
        if role == "assistant":
            if "content" in message and message["content"] is None:
                problems.append(f"messages.[{i}].content: Input should be a valid string")
            ids = [str(_dict(c).get("id")) for c in _list(message.get("tool_calls"))]
            all_ids.extend(ids)
            pending = list(ids)
    if pending:
        problems.append(f"tool calls without results at the end: {', '.join(pending)}")
    problems.extend(f"duplicate tool call id {d}" for d in _duplicates(all_ids))
    return problems


def check_responses(body: JSONObject) -> list[str]:
    """Violations in a Responses request."""
    items = [_dict(i) for i in _list(body.get("input"))]
    problems = _late_system_messages(items, "input[{}]")
    all_ids: list[str] = []
    pending: list[str] = []
    answered: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            call_id = str(item.get("call_id"))
            all_ids.append(call_id)
            pending.append(call_id)
        elif kind == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id in pending:
                pending.remove(call_id)
                answered.add(call_id)
            else:
                problems.append(
                    f"input[{i}]: No tool call found for function call output with call_id"
                    f" {call_id}."
                )
        elif item.get("role") == "user" and pending:
            problems.append(f"No tool output found for function call {', '.join(pending)}.")
            pending = []
    if pending:
        problems.append(f"No tool output found for function call {', '.join(pending)}.")
    problems.extend(f"duplicate tool call id {d}" for d in _duplicates(all_ids))
    return problems


_ANTHROPIC_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")


def check_anthropic(body: JSONObject) -> list[str]:
    """Violations in a Messages request."""
    problems: list[str] = []
    messages = [_dict(m) for m in _list(body.get("messages"))]
    all_ids: list[str] = []
    expected: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        blocks = [_dict(b) for b in _list(message.get("content"))]
        if role not in ("user", "assistant"):
            problems.append(f"messages.{i}: unexpected role {role!r} (system goes in `system`)")
            continue
        results = [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
        missing = [c for c in expected if c not in results]
        if missing:
            problems.append(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks"
                f" immediately after: {', '.join(missing)}. Each `tool_use` block must have a"
                " corresponding `tool_result` block in the next message."
            )
        stray = [r for r in results if r not in expected]
        if stray:
            problems.append(
                f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks:"
                f" {', '.join(stray)}. Each `tool_result` block must have a corresponding"
                " `tool_use` block in the previous message."
            )
        problems.extend(
            f"messages.{i}: tool_result {d} appears twice" for d in _duplicates(results)
        )
        expected = []
        if role == "assistant":
            expected = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
            all_ids.extend(expected)
        problems.extend(
            f"messages.{i}: tool id {tid!r}: String should match pattern '^[a-zA-Z0-9_-]+$'"
            for tid in (*expected, *results)
            if not _ANTHROPIC_TOOL_ID.fullmatch(tid)
        )
    if expected:
        problems.append(f"tool_use ids without results at the end: {', '.join(expected)}")
    problems.extend(f"duplicate tool call id {d}" for d in _duplicates(all_ids))
    return problems


CHECKS: dict[str, Callable[[JSONObject], list[str]]] = {
    "openai-chat": check_chat,
    "openai-responses": check_responses,
    "anthropic-messages": check_anthropic,
}
