"""OpenHands event streams as Comal sessions.

Two shapes hold the same events:
- an evaluation `output.jsonl`: one evaluated instance per line,
  `{instance_id, instruction, metadata, history: [event…], metrics, error, …}`; each line is
  one session (labelled by `instance_id`);
- an event list: a JSON array of events (one session).

Events have `id`, `source` (`agent` / `user` / `environment`) and either `action` + `args` or
`observation` + `content` + `extras` + `cause`. Mapping:
- the `system` action (`args.content`) is the system prompt;
- a `message` action from the user is a user message (`args.content`); from the agent without
  a model response it is an assistant text;
- an agent action with `tool_call_metadata` belongs to the model response it names
  (`model_response.id`): the first action of a response becomes one assistant message, built
  from the recorded response itself (`choices[0].message`: `content` and every `tool_calls`
  entry, with `usage`), so a response with several calls is one message;
- an observation carrying `tool_call_metadata.tool_call_id` is that call's result (`content`;
  `extras.metadata.exit_code`; an `error` observation is an error result);
- `recall` actions and observations (workspace context), state changes and other events the
  agent did not answer are not conversation and are skipped: OpenHands renders the recalled
  context into its prompt from `extras`, and that text is not recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from comal.importers.mini_swe_agent import parse_arguments
from comal.importers.plan import (
    ParsedSession,
    PlannedEntry,
    SessionPlan,
    as_json,
    format_error,
    recorded_ms,
    usage_openai_chat,
)
from comal.ledger.records import WarningRecord
from comal.messages import Part, TextPart, ToolCallPart
from comal.usage import Usage

FORMAT = "openhands"
_WIRE = "openai-chat"
_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}


def is_event(value: object) -> bool:
    """Whether `value` looks like an OpenHands event."""
    return (
        isinstance(value, dict)
        and "source" in value
        and ("action" in value or "observation" in value)
    )


def is_evaluation_record(value: object) -> bool:
    """Whether `value` is one line of an evaluation `output.jsonl`."""
    if not isinstance(value, dict):
        return False
    history = value.get("history")
    return isinstance(history, list) and "instance_id" in value and any(map(is_event, history))


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(str(b.get("text", "")) for b in value if isinstance(b, dict))
    return str(value)


class _Stream:
    """Feeds the events of one session into a `SessionPlan`."""

    def __init__(self, path: Path, where: str) -> None:
        self.plan = SessionPlan(path, _WIRE)
        self.path = path
        self.where = where
        self.system = ""
        self.model = ""
        self.task = ""
        self._responses: set[str] = set()

    def _error(self, event_id: object, reason: str) -> Exception:
        return format_error(self.path, None, f"{self.where} event {event_id}: {reason}")

    def feed(self, event: dict[str, Any]) -> None:
        self.plan.at_ms = recorded_ms(event.get("timestamp"))
        if "action" in event:
            self._action(event)
        elif "observation" in event:
            self._observation(event)

    def _action(self, event: dict[str, Any]) -> None:
        action = event.get("action")
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        assert isinstance(args, dict)
        metadata = event.get("tool_call_metadata")
        if action == "system":
            self.system = _text(args.get("content"))
            return
        if isinstance(metadata, dict):
            self._response(event, metadata)
            return
        if action != "message":
            return  # recall, state changes: not conversation
        text = _text(args.get("content"))
        if event.get("source") == "user":
            self.task = self.task or text
            self.plan.user_text(text)
        elif text:
            self.plan.assistant(
                (TextPart(text),), model=self.model, finish="stop", usage=Usage(), usage_raw=None
            )

    def _response(self, event: dict[str, Any], metadata: dict[str, Any]) -> None:
        response = metadata.get("model_response")
        if not isinstance(response, dict) or not isinstance(response.get("id"), str):
            raise self._error(event.get("id"), "tool_call_metadata without a model_response id")
        if response["id"] in self._responses:
            return  # a later call of a response already planned
        self._responses.add(response["id"])
        choices = response.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise self._error(event.get("id"), "model_response without choices[0].message")
        parts: list[Part] = []
        content = _text(message.get("content"))
        if content:
            parts.append(TextPart(content))
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(call.get("id"), str):
                raise self._error(event.get("id"), "malformed tool call in model_response")
            arguments = parse_arguments(function.get("arguments"))
            parts.append(ToolCallPart(call["id"], str(function.get("name")), arguments))
        model = str(response.get("model") or self.model)
        self.model = self.model or model
        raw_finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        has_calls = any(isinstance(p, ToolCallPart) for p in parts)
        usage = response.get("usage")
        self.plan.assistant(
            tuple(parts),
            model=model,
            finish=_FINISH.get(str(raw_finish), "tool_calls" if has_calls else "stop"),
            usage=usage_openai_chat(usage),
            usage_raw=as_json(usage) if usage is not None else None,
        )

    def _observation(self, event: dict[str, Any]) -> None:
        metadata = event.get("tool_call_metadata")
        call_id = metadata.get("tool_call_id") if isinstance(metadata, dict) else None
        if not isinstance(call_id, str) or not self.plan.has_pending(call_id):
            return  # recall, state changes, observations of no model call
        extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
        assert isinstance(extras, dict)
        info = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
        assert isinstance(info, dict)
        code = info.get("exit_code")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        self.plan.tool_result(
            call_id,
            _text(event.get("content")).encode("utf-8", "surrogateescape"),
            line=None,
            is_error=event.get("observation") == "error",
            exit_code=None if exit_code == -1 else exit_code,
        )


def _session(
    path: Path, events: list[Any], *, label: str, where: str, title: str, error: str | None
) -> ParsedSession:
    stream = _Stream(path, where)
    for event in events:
        if not isinstance(event, dict):
            raise format_error(path, None, f"{where}: an event must be a JSON object")
        stream.feed(event)
    entries = stream.plan.done()
    if error:
        # How the run ended (e.g. the iteration limit), after every call is closed.
        notice = WarningRecord("IMPORTED_NOTICE", error)
        entries += (PlannedEntry(notice),)
    return ParsedSession(
        format=FORMAT,
        path=str(path),
        label=label,
        title=(title or stream.task)[:80],
        cwd="",
        model=stream.model,
        system=stream.system,
        entries=entries,
        origin_id=title or None,
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise format_error(path, None, f"cannot read: {exc}") from exc


def parse(path: Path) -> tuple[ParsedSession, ...]:
    """Parse an evaluation `output.jsonl` (one session per line) or a JSON event list.

    Raises:
        ImportFormatError: not JSON (names the line), or no OpenHands events.
    """
    text = _read_text(path)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            events = json.loads(text)
        except json.JSONDecodeError as exc:
            raise format_error(path, exc.lineno, f"not JSON ({exc.msg})") from exc
        if not isinstance(events, list) or not any(map(is_event, events)):
            raise format_error(path, 1, "not an OpenHands event list")
        stem = path.name.removesuffix(".json")
        return (_session(path, events, label=stem, where="list", title="", error=None),)
    sessions = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise format_error(path, number, f"not JSON ({exc.msg})") from exc
        if not is_evaluation_record(record):
            raise format_error(path, number, "not an OpenHands evaluation record")
        instance = str(record["instance_id"])
        error = record.get("error")
        sessions.append(
            _session(
                path,
                record["history"],
                label=instance,
                where=f"line {number}",
                title=instance,
                error=str(error) if error else None,
            )
        )
    if not sessions:
        raise format_error(path, None, "empty file")
    return tuple(sessions)
