"""SWE-agent trajectories (`*.traj`) as Comal sessions.

`history` is the chat as sent to the model (`trajectory` repeats the steps and is not needed).
Two variants:
- **text actions**: the assistant message carries its command in `action`. The text is kept
  verbatim and the action becomes `ToolCallPart(name="bash", arguments={"command": action})`
  with the synthetic stable text-action id `text_action_swe_<history index>`
  (`plan.text_action_id`); the next `user` message is its result.
- **function calling**: assistant `tool_calls`, then `role: tool` messages naming
  `tool_call_ids` (or `tool_call_id`).

Demonstrations (`is_demo`) stay user messages. SWE-agent records no per-call usage, so usage is
unknown (null), never 0. `info.submission` becomes `session.finished`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from comal.importers.mini_swe_agent import parse_arguments
from comal.importers.plan import (
    ParsedSession,
    SessionPlan,
    format_error,
    read_json,
    text_action_id,
)
from comal.messages import Part, TextPart, ToolCallPart
from comal.usage import Usage

FORMAT = "swe-agent"


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _model(doc: dict[str, Any]) -> str:
    replay = doc.get("replay_config")
    if isinstance(replay, str):
        return ""
    if isinstance(replay, dict):
        agent = replay.get("agent")
        model = agent.get("model") if isinstance(agent, dict) else None
        if isinstance(model, dict):
            return str(model.get("name") or "")
    return ""


def parse(path: Path) -> ParsedSession:
    """Parse one SWE-agent `.traj` file.

    Raises:
        ImportFormatError: not JSON (names the line), no `history`, or a malformed message.
    """
    doc = read_json(path)
    history = doc.get("history")
    if not isinstance(history, list):
        raise format_error(path, None, "no 'history' list (not a SWE-agent trajectory)")
    plan = SessionPlan(path, "openai-chat")
    system: list[str] = []
    task = ""
    pending: str | None = None
    for index, message in enumerate(history):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise format_error(path, None, f"history[{index}] is not a message with a role")
        role, text = message["role"], _text(message)
        if role == "system":
            system.append(text)
        elif role == "user":
            if pending is not None:
                plan.tool_result(pending, text.encode("utf-8", "surrogateescape"), line=None)
                pending = None
            else:
                task = task or ("" if message.get("is_demo") else text)
                plan.user_text(text)
        elif role == "assistant":
            pending = None
            parts: list[Part] = [TextPart(text)] if text else []
            calls = message.get("tool_calls") or []
            for call in calls:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(call.get("id"), str):
                    raise format_error(path, None, f"history[{index}]: malformed tool call")
                arguments = parse_arguments(function.get("arguments"))
                parts.append(ToolCallPart(call["id"], str(function.get("name")), arguments))
            action = message.get("action")
            if not calls and isinstance(action, str) and action.strip():
                pending = text_action_id("swe", index)
                parts.append(ToolCallPart(pending, "bash", {"command": action.strip()}))
            plan.assistant(
                tuple(parts),
                model=_model(doc),
                finish="tool_calls" if calls or pending else "stop",
                usage=Usage(),
                usage_raw=None,
            )
        elif role == "tool":
            ids = message.get("tool_call_ids") or [message.get("tool_call_id")]
            for call_id in ids:
                plan.tool_result(str(call_id), text.encode("utf-8", "surrogateescape"), line=None)
        else:
            raise format_error(path, None, f"history[{index}]: unknown role {role!r}")
    info = doc.get("info")
    if isinstance(info, dict) and isinstance(info.get("submission"), str):
        plan.finished(info["submission"])
    return ParsedSession(
        format=FORMAT,
        path=str(path),
        label=path.name.removesuffix(".traj"),
        title=task[:80],
        cwd="",
        model=_model(doc),
        system="\n\n".join(system),
        entries=plan.done(),
    )
