"""What the loop writes to the ledger around one model call.

Requests are recorded by the hash of their exact bytes (never the bytes or any key), replies
with normalized and raw usage, unfinished replies as `response.discarded` — none of whose
tool calls ever run — and a warning when a server reports far fewer prompt tokens than were
sent (Ollama's silent truncation).
"""

from __future__ import annotations

import hashlib

from comal.agent.events import AssistantReplied, Notice, ResponseDiscarded
from comal.agent.session import Session
from comal.agent.tool_runner import INVALID_ARGUMENTS_KEY
from comal.errors import ProviderError
from comal.messages import JSONObject, Message, ToolCallPart, message_to_json
from comal.providers.base import ModelRequest
from comal.providers.discovery import detect_prompt_truncation
from comal.providers.reply import Reply


def record_reply(s: Session, reply: Reply, request_entry: str, estimated: int) -> Message:
    """Record a finished reply (and a warning if the server seems to have cut the prompt).

    A refusal is recorded with its text and reason; tool calls in a refused reply are dropped
    (counted), since the turn ends there and they would otherwise wait as pending calls.
    """
    message = with_invalid_calls(reply)
    payload: JSONObject = {
        "message": message_to_json(message),
        "wire": str(s.provider.wire),
        "model": s.provider.model,
        "finish": reply.finish,
        "usage": reply.usage.to_json(),
        "usage_raw": reply.usage_raw,
        "request_entry": request_entry,
    }
    if reply.refused:
        kept = tuple(p for p in reply.message.parts if not isinstance(p, ToolCallPart))
        message = Message("assistant", kept)
        payload["message"] = message_to_json(message)
        payload["refusal"] = {
            "text": reply.refusal_text(),
            "reason": reply.refusal_reason(),
            "details": reply.details,
            "dropped_calls": len(reply.message.tool_calls) + len(reply.invalid_calls),
        }
    s.record("message.assistant", payload)
    reported = reply.usage.total_input
    warning = None if reported is None else detect_prompt_truncation(reported, estimated)
    if warning is not None:
        s.record("warning", {"code": "PROMPT_TRUNCATED", "message": warning})
        s.emit(Notice("PROMPT_TRUNCATED", warning))
    s.emit(
        AssistantReplied(
            message.text,
            len(message.tool_calls),
            reply.finish,
            reply.usage.total_input,
            reply.usage.output,
        )
    )
    return message


def record_request(
    s: Session, request: ModelRequest, estimated: int, checkpoint: int | None
) -> str:
    body = s.provider.encode(request)
    entry = s.record(
        "provider.request",
        {
            "sha256": "sha256:" + hashlib.sha256(body).hexdigest(),
            "size_bytes": len(body),
            "wire": str(s.provider.wire),
            "model": request.model,
            "fingerprint": {
                "model": request.model,
                "effort": request.reasoning_effort,
                "tools_digest": s.tools_digest,
                "config_digest": s.config_digest,
                "checkpoint": checkpoint,
            },
            "estimated_input_tokens": estimated,
            "output_reserve": request.max_output_tokens,
        },
    )
    return entry.id


def record_discarded(s: Session, reply: Reply, reserve: int) -> None:
    """Record an unfinished response; grow the reserve (OUTPUT_LENGTH) or derive (window full)."""
    reason = "OUTPUT_LENGTH" if reply.finish == "length" else "CONTEXT_WINDOW_EXCEEDED"
    s.record(
        "response.discarded",
        {
            "reason": reason,
            "message": message_to_json(reply.message),
            "usage": reply.usage.to_json(),
            "output_reserve": reserve,
        },
    )
    if reason == "OUTPUT_LENGTH":
        new_reserve = s.engine.grow_output_reserve()
    else:
        s.engine.compact(by="context_window_exceeded")
        new_reserve = reserve
    s.emit(ResponseDiscarded(reason, new_reserve))


def with_invalid_calls(reply: Reply) -> Message:
    """Keep calls whose arguments were not JSON, so each still gets exactly one (error) result."""
    if not reply.invalid_calls:
        return reply.message
    extra = tuple(
        ToolCallPart(bad.call_id, bad.name, {INVALID_ARGUMENTS_KEY: bad.error})
        for bad in reply.invalid_calls
    )
    return Message("assistant", reply.message.parts + extra)


def error_json(exc: ProviderError) -> JSONObject:
    return {"code": exc.code, "message": exc.message, "status": exc.status}
