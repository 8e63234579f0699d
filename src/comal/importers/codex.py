"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) as Comal sessions.

Each line is `{"timestamp", "type", "payload"}` (`RolloutLine` with a flattened `RolloutItem`
in codex-rs/protocol): `session_meta`, `turn_context`, `response_item`, `compacted`,
`event_msg`. Mapping:
- consecutive output items (`reasoning`, assistant `message`, `function_call`,
  `custom_tool_call`, `local_shell_call`) form one model response → one `message.assistant`;
  the `token_count` event that follows it gives its usage (`last_token_usage`);
- `function_call_output` / `custom_tool_call_output` → `tool.result` (`success: false` → error);
- `user` and `developer` messages → `message.user`; `base_instructions` → the system prompt;
- `compacted` (the peer's own compaction) → `message.summary`; other events are telemetry.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any

from comal.importers.mini_swe_agent import parse_arguments
from comal.importers.plan import (
    ParsedSession,
    SessionPlan,
    as_json,
    format_error,
    read_jsonl,
    recorded_ms,
    usage_codex,
)
from comal.messages import JSONValue, MediaPart, Part, ReasoningPart, TextPart, ToolCallPart
from comal.usage import Usage

FORMAT = "codex"
_WIRE = "openai-responses"
_OUTPUT_ITEMS = ("reasoning", "function_call", "custom_tool_call", "local_shell_call")


def _image(url: str, path: Path, line: int) -> MediaPart:
    head, _, data = url.partition(",")
    if not head.startswith("data:") or ";base64" not in head:
        return MediaPart("text/uri-list", base64.b64encode(url.encode()).decode())
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise format_error(path, line, "input_image with invalid base64 data") from exc
    return MediaPart(head.removeprefix("data:").split(";")[0], data)


def _exit_code(text: str) -> int | None:
    """Shell outputs are recorded as `{"output": …, "metadata": {"exit_code": N}}` text."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    metadata = value.get("metadata") if isinstance(value, dict) else None
    code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _output_text(output: object) -> tuple[str, bool]:
    """The text of a function output payload and whether it reports failure."""
    if isinstance(output, str):
        return output, False
    if isinstance(output, dict):
        failed = output.get("success") is False
        content = output.get("content", output.get("body", ""))
        if isinstance(content, list):
            content = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        return str(content), failed
    if isinstance(output, list):
        return "\n".join(str(c.get("text", "")) for c in output if isinstance(c, dict)), False
    return "", False


class _Rollout:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.plan = SessionPlan(path, _WIRE)
        self.model = ""
        self.first_model = ""
        self.parts: list[Part] = []
        self.usage: Usage = Usage()
        self.usage_raw: JSONValue = None
        self.first_text = ""
        self.parts_at: int | None = None
        """When the open response's last item was recorded (the response's own time; the
        plan's `at_ms` is the time of the line being read)."""

    def flush(self) -> None:
        if not self.parts:
            return
        calls = any(isinstance(p, ToolCallPart) for p in self.parts)
        line_at, self.plan.at_ms = self.plan.at_ms, self.parts_at
        self.plan.assistant(
            tuple(self.parts),
            model=self.model,
            finish="tool_calls" if calls else "stop",
            usage=self.usage,
            usage_raw=self.usage_raw,
        )
        self.first_model = self.first_model or self.model
        self.parts, self.usage, self.usage_raw = [], Usage(), None
        self.plan.at_ms = line_at

    def response_item(self, line: int, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message":
            self._message(line, item)
        elif kind in _OUTPUT_ITEMS:
            self.parts.append(self._output_part(line, item))
            self.parts_at = self.plan.at_ms
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.flush()
            text, failed = _output_text(item.get("output"))
            self.plan.tool_result(
                str(item.get("call_id")),
                text.encode("utf-8", "surrogateescape"),
                line=line,
                is_error=failed,
                exit_code=_exit_code(text),
                exit_code_in_output=True,  # read from the output's own metadata
            )

    def _message(self, line: int, item: dict[str, Any]) -> None:
        role = item.get("role")
        content = item.get("content")
        if not isinstance(content, list):
            raise format_error(self.path, line, "message content must be a list")
        parts: list[Part] = []
        for block in content:
            if not isinstance(block, dict):
                raise format_error(self.path, line, "content item must be an object")
            if block.get("type") in ("input_text", "output_text", "text"):
                parts.append(TextPart(str(block.get("text", ""))))
            elif block.get("type") == "input_image":
                parts.append(_image(str(block.get("image_url", "")), self.path, line))
        if role == "assistant":
            self.parts.extend(parts)
            self.parts_at = self.plan.at_ms
            return
        self.flush()
        text = "".join(p.text for p in parts if isinstance(p, TextPart))
        # Environment and instruction blocks (`<environment_context>`…) make poor titles.
        if role == "user" and not text.lstrip().startswith("<"):
            self.first_text = self.first_text or text
        self.plan.user(tuple(parts))

    def _output_part(self, line: int, item: dict[str, Any]) -> Part:
        kind = item["type"]
        if kind == "reasoning":
            summary = item.get("summary") or []
            text = "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, dict))
            encrypted = item.get("encrypted_content")
            return ReasoningPart(
                _WIRE,
                self.model,
                text,
                encrypted_content=encrypted if isinstance(encrypted, str) else None,
                item_id=item.get("id") if isinstance(item.get("id"), str) else None,
            )
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            raise format_error(self.path, line, f"{kind} without call_id")
        if kind == "function_call":
            name = str(item.get("name"))
            return ToolCallPart(call_id, name, parse_arguments(item.get("arguments")))
        if kind == "custom_tool_call":
            return ToolCallPart(call_id, str(item.get("name")), {"input": item.get("input")})
        action = item.get("action")
        return ToolCallPart(call_id, "local_shell", action if isinstance(action, dict) else {})

    def token_count(self, payload: dict[str, Any]) -> None:
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        if isinstance(last, dict) and self.parts:
            self.usage = usage_codex(last)
            self.usage_raw = as_json(last)


def parse(path: Path) -> ParsedSession:
    """Parse one Codex rollout.

    Raises:
        ImportFormatError: a line that is not a JSON object with `type` and an object
            `payload`, or a malformed item (names the file and line).
    """
    rollout = _Rollout(path)
    system = ""
    cwd = ""
    origin = None
    for line, record in read_jsonl(path):
        kind, payload = record.get("type"), record.get("payload")
        if not isinstance(kind, str) or not isinstance(payload, dict):
            raise format_error(path, line, "record without 'type' and an object 'payload'")
        rollout.plan.at_ms = recorded_ms(record.get("timestamp"))
        if kind == "session_meta":
            cwd = str(payload.get("cwd") or cwd)
            origin = payload.get("id") or origin
            instructions = payload.get("base_instructions") or payload.get("instructions")
            if isinstance(instructions, dict):
                instructions = instructions.get("text")
            if isinstance(instructions, str):
                system = instructions
        elif kind == "turn_context":
            rollout.model = str(payload.get("model") or rollout.model)
            cwd = cwd or str(payload.get("cwd") or "")
        elif kind == "response_item":
            rollout.response_item(line, payload)
        elif kind == "compacted":
            rollout.flush()
            rollout.plan.summary(str(payload.get("message", "")), "codex:compacted")
        elif kind == "event_msg" and payload.get("type") == "token_count":
            rollout.token_count(payload)
    rollout.flush()
    return ParsedSession(
        format=FORMAT,
        path=str(path),
        label=path.stem,
        title=rollout.first_text[:80],
        cwd=cwd,
        model=rollout.first_model,
        system=system,
        entries=rollout.plan.done(),
        origin_id=str(origin) if origin else None,
    )
