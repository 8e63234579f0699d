"""Gemini CLI chat recordings (`~/.gemini/tmp/<project hash>/chats/session-*.json`) as sessions.

One JSON object, a `ConversationRecord`: `sessionId`, `projectHash`, `startTime`,
`lastUpdated` and `messages`, each with `id`, `timestamp`, `type` and `content` (a string, or in
newer versions a list of parts):
- `user`: what the person sent;
- `gemini`: one model response, with its `toolCalls` (`id`, `name`, `args`, `status`, and the
  `result` sent back to the model: `functionResponse` parts whose `response` holds `output` or
  `error`), its `tokens` (`input` counts the cached prompt too, `cached`, `output`, `thoughts`,
  `tool`) and its `model`. The results of a response's calls are the next request's input, so
  each becomes a `tool.result` right after its response;
- `info`, `warning`, `error`: notices shown to the person, never sent to the model: skipped.

A call recorded without a result (still executing when the file ends) is closed by the plan as
interrupted. A `status` of `error` or `cancelled` marks the result an error; a shell command's
result keeps the exit code its report names (`Exit Code: 1`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from comal.importers.plan import (
    ParsedSession,
    SessionPlan,
    as_json,
    format_error,
    read_json,
    recorded_ms,
)
from comal.messages import Part, TextPart, ToolCallPart
from comal.usage import Usage

FORMAT = "gemini-cli"
_WIRE = "gemini-generate-content"
_NOTICES = frozenset({"info", "warning", "error"})
_FAILED = frozenset({"error", "cancelled"})
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)$", re.MULTILINE)
"""The line `run_shell_command` ends its report with (`Exit Code: (none)` when killed)."""


def is_conversation(doc: dict[str, Any]) -> bool:
    """Whether a JSON object is a Gemini CLI `ConversationRecord`."""
    return isinstance(doc.get("messages"), list) and "projectHash" in doc and "sessionId" in doc


def _text(content: object) -> str:
    """The text of a `content`: a string, a part (`{"text": …}`) or a list of either."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        text = content.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(content, list):
        return "".join(_text(item) for item in content)
    return ""


def _response_text(response: object) -> str:
    """What a `functionResponse.response` told the model: its `output`, else its `error`, else
    the object itself as JSON (a tool may answer with any object)."""
    if isinstance(response, dict):
        for key in ("output", "error"):
            value = response.get(key)
            if isinstance(value, str):
                return value
    return json.dumps(response, ensure_ascii=False, sort_keys=True)


def _result_text(result: object) -> str | None:
    """The text a call's `result` sent back (None when nothing was recorded)."""
    if result is None:
        return None
    items = result if isinstance(result, list) else [result]
    pieces: list[str] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("functionResponse"), dict):
            pieces.append(_response_text(item["functionResponse"].get("response")))
        else:
            pieces.append(_text(item))
    return "\n".join(piece for piece in pieces if piece)


def _exit_code(name: str, output: str) -> int | None:
    """The exit code a `run_shell_command` report names (its last `Exit Code:` line)."""
    if name != "run_shell_command":
        return None
    codes = _EXIT_CODE.findall(output)
    return int(codes[-1]) if codes else None


def _tokens(raw: object) -> Usage:
    """`tokens` as usage: `input` holds the cached prompt too, `output` leaves thoughts out."""
    if not isinstance(raw, dict):
        return Usage()

    def number(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    prompt, cached, output, thoughts = (
        number(k) for k in ("input", "cached", "output", "thoughts")
    )
    return Usage(
        new_input=None if prompt is None else max(prompt - (cached or 0), 0),
        cache_read=cached,
        output=None if output is None else output + (thoughts or 0),
        reasoning=thoughts,
    )


def _calls(path: Path, index: int, message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("toolCalls") or []
    if not isinstance(calls, list):
        raise format_error(path, None, f"messages[{index}]: toolCalls is not a list")
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            raise format_error(path, None, f"messages[{index}]: a tool call without an id")
        if not isinstance(call.get("name"), str):
            raise format_error(path, None, f"messages[{index}]: tool call {call['id']} has no name")
    return calls


def parse(path: Path) -> ParsedSession:
    """Parse one Gemini CLI chat recording.

    Raises:
        ImportFormatError: not JSON (names the line), not a conversation record, or a malformed
            message (names its index).
    """
    doc = read_json(path)
    if not is_conversation(doc):
        raise format_error(path, None, "not a Gemini CLI conversation record")
    plan = SessionPlan(path, _WIRE)
    model = ""
    task = ""
    for index, message in enumerate(doc["messages"]):
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise format_error(path, None, f"messages[{index}] is not a message with a type")
        kind = message["type"]
        plan.at_ms = recorded_ms(message.get("timestamp"))
        text = _text(message.get("content"))
        if kind == "user":
            task = task or text
            plan.user_text(text)
        elif kind == "gemini":
            calls = _calls(path, index, message)
            model = str(message.get("model") or model)
            parts: list[Part] = [TextPart(text)] if text else []
            for call in calls:
                args = call.get("args")
                parts.append(
                    ToolCallPart(call["id"], call["name"], args if isinstance(args, dict) else {})
                )
            tokens = message.get("tokens")
            plan.assistant(
                tuple(parts),
                model=str(message.get("model") or model),
                finish="tool_calls" if calls else "stop",
                usage=_tokens(tokens),
                usage_raw=as_json(tokens) if tokens is not None else None,
            )
            for call in calls:
                output = _result_text(call.get("result"))
                if output is None:
                    continue  # never answered: the plan closes it as interrupted
                plan.at_ms = recorded_ms(call.get("timestamp")) or plan.at_ms
                plan.tool_result(
                    call["id"],
                    output.encode("utf-8", "surrogateescape"),
                    line=None,
                    is_error=call.get("status") in _FAILED,
                    exit_code=_exit_code(call["name"], output),
                    exit_code_in_output=True,  # read from its own `Exit Code:` line
                )
        elif kind not in _NOTICES:
            raise format_error(path, None, f"messages[{index}]: unknown type {kind!r}")
    return ParsedSession(
        format=FORMAT,
        path=str(path),
        label=path.name.removesuffix(".json"),
        title=task[:80],
        cwd="",
        model=model,
        system="",
        entries=plan.done(),
        origin_id=str(doc["sessionId"]),
    )
