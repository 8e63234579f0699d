"""mini-swe-agent trajectories (`*.traj.json`) as Comal sessions.

`messages` is the exact chat the agent sent: `system`, the task as `user`, then assistant turns
and observations. Two variants:
- **v1, text actions** (`mini-swe-agent-1`): the assistant writes one fenced ```` ```bash ````
  block. Its text is kept verbatim and the command also becomes a
  `ToolCallPart(name="bash", arguments={"command": …})` with the synthetic stable text-action
  id `text_action_mini_<message index>` (`plan.text_action_id`); the next `user` message
  (`<returncode>…`) becomes that call's `tool.result`. So projections can act on observations
  like on any tool output; the replay renders both as they were sent. A reply without exactly
  one bash block is a format error in mini-swe-agent: it gets no call, and the next user
  message stays a user message.
- **v2, tool calling** (`mini-swe-agent-1.1`): assistant `tool_calls` and `role: tool` results.

Usage comes from `extra.response.usage` (OpenAI chat shape). The `exit` message and
`info.submission` become `session.finished`.
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
    text_action_id,
    usage_openai_chat,
)
from comal.ledger.records import Kind
from comal.messages import JSONObject, Part, TextPart, ToolCallPart

FORMAT = "mini-swe-agent"
_WIRE = "openai-chat"
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")
_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}


def text_action(content: str) -> str | None:
    """The bash command of a v1 reply, or None unless there is exactly one fenced block."""
    blocks = _BASH_BLOCK.findall(content)
    return blocks[0].strip() if len(blocks) == 1 else None


def exit_code(observation: str) -> int | None:
    """The `<returncode>` of a mini-swe-agent observation, if present."""
    match = _RETURNCODE.search(observation)
    return int(match.group(1)) if match else None


def parse_arguments(raw: object) -> JSONObject:
    """OpenAI function-call arguments (a JSON string) as an object; unparsable ones kept raw."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(str(raw))
    except json.JSONDecodeError:
        return {"raw_arguments": str(raw)}
    return value if isinstance(value, dict) else {"raw_arguments": str(raw)}


def _response(message: dict[str, Any]) -> dict[str, Any]:
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    return response if isinstance(response, dict) else {}


def _recorded_at(message: dict[str, Any]) -> int | None:
    """When the message was recorded: v2's `extra.timestamp`, else its response's `created`."""
    extra = message.get("extra")
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    return recorded_ms(stamp if stamp is not None else _response(message).get("created"))


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


def parse(path: Path) -> ParsedSession:
    """Parse one mini-swe-agent trajectory (v1 or v2).

    Raises:
        ImportFormatError: not JSON (names the line), no `messages` list, or a malformed message
            (names its index).
    """
    doc = read_json(path)
    messages = doc.get("messages")
    if not isinstance(messages, list):
        raise format_error(path, None, "no 'messages' list (not a mini-swe-agent trajectory)")
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    assert isinstance(info, dict)
    plan = SessionPlan(path, _WIRE)
    system: list[str] = []
    task = ""
    model = ""
    pending_text_call: str | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise format_error(path, None, f"messages[{index}] is not a message with a role")
        role = message["role"]
        text = _content(message)
        plan.at_ms = _recorded_at(message)
        if role == "system":
            system.append(text)
        elif role == "user":
            if pending_text_call is not None:
                plan.tool_result(
                    pending_text_call,
                    text.encode("utf-8", "surrogateescape"),
                    line=None,
                    exit_code=exit_code(text),
                    exit_code_in_output=True,
                )
                pending_text_call = None
            else:
                task = task or text
                plan.user_text(text)
        elif role == "assistant":
            pending_text_call = None
            response = _response(message)
            model = model or str(response.get("model") or "")
            parts: list[Part] = [TextPart(text)] if text else []
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(call.get("id"), str):
                    raise format_error(path, None, f"messages[{index}]: malformed tool call")
                parts.append(
                    ToolCallPart(
                        call["id"],
                        str(function.get("name")),
                        parse_arguments(function.get("arguments")),
                    )
                )
            if not message.get("tool_calls"):
                command = text_action(text)
                if command is not None:
                    pending_text_call = text_action_id("mini", index)
                    parts.append(ToolCallPart(pending_text_call, "bash", {"command": command}))
            choices = response.get("choices")
            raw_finish = None
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                raw_finish = choices[0].get("finish_reason")
            has_calls = any(isinstance(p, ToolCallPart) for p in parts)
            usage_raw = response.get("usage")
            plan.assistant(
                tuple(parts),
                model=str(response.get("model") or model),
                finish=_FINISH.get(str(raw_finish), "tool_calls" if has_calls else "stop"),
                usage=usage_openai_chat(usage_raw),
                usage_raw=as_json(usage_raw) if usage_raw is not None else None,
            )
        elif role == "tool":
            call_id = message.get("tool_call_id")
            plan.tool_result(
                str(call_id),
                text.encode("utf-8", "surrogateescape"),
                line=None,
                exit_code=exit_code(text),
                exit_code_in_output=True,
            )
        elif role == "exit":
            plan.finished(text)
        else:
            raise format_error(path, None, f"messages[{index}]: unknown role {role!r}")
    submission = info.get("submission")
    if isinstance(submission, str) and not any(
        e.kind == Kind.SESSION_FINISHED for e in plan.entries
    ):
        plan.finished(submission)
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    assert isinstance(config, dict)
    model_config = config.get("model") if isinstance(config.get("model"), dict) else {}
    assert isinstance(model_config, dict)
    return ParsedSession(
        format=FORMAT,
        path=str(path),
        label=path.name.removesuffix(".json").removesuffix(".traj"),
        title=str(doc.get("instance_id") or task[:80]),
        cwd="",
        model=model or str(model_config.get("model_name") or ""),
        system="\n\n".join(system),
        entries=plan.done(),
        origin_id=str(doc["instance_id"]) if doc.get("instance_id") else None,
    )
