"""What the loop writes to the ledger around one model call.

Requests are recorded by the hash of the bytes sent (the `EncodedRequest` the loop then hands
to `send`; never the bytes or any key), finished replies with normalized and raw usage (the
engine records unfinished ones, `ContextEngine.on_unfinished`), and a warning when a server
reports far fewer prompt tokens than were sent (Ollama's silent truncation).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from comal.agent.core.events import AssistantReplied, Notice
from comal.agent.core.session import Session
from comal.errors import ProviderError
from comal.ledger.records import (
    AssistantMessage,
    ProviderErrorRecord,
    ProviderRequest,
    ProviderResent,
    WarningRecord,
)
from comal.messages import (
    JSONObject,
    Message,
    ToolCallPart,
    ToolSpec,
    digest_bytes,
    message_to_json,
)
from comal.providers.base import EncodedRequest, Resent
from comal.providers.discovery import detect_prompt_truncation
from comal.providers.reply import Reply


def record_reply(
    s: Session,
    reply: Reply,
    request_entry: str,
    estimated: int,
    recovered: JSONObject | None = None,
    offered: Sequence[ToolSpec] = (),
) -> Message:
    """Record a finished reply (and a warning if the server seems to have cut the prompt).

    `recovered` marks calls taken from the reply's text (`comal.agent.core.text_calls`); `offered`
    are the tools the request carried (a template that drops them explains a short count).

    A refusal is recorded with its text and reason; tool calls in a refused reply are dropped
    (counted), since the turn ends there and they would otherwise wait as pending calls.
    """
    message = reply.message
    refusal: JSONObject | None = None
    if reply.refused:
        kept = tuple(p for p in reply.message.parts if not isinstance(p, ToolCallPart))
        message = Message("assistant", kept)
        refusal = {
            "text": reply.refusal_text(),
            "reason": reply.refusal_reason(),
            "details": reply.details,
            "dropped_calls": len(reply.message.tool_calls),
        }
    s.write(
        AssistantMessage(
            message=message_to_json(message),
            wire=str(s.provider.wire),
            model=s.provider.model,
            finish=reply.finish.value,
            usage=reply.usage.to_json(),
            usage_raw=reply.usage_raw,
            request_entry=request_entry,
            refusal=refusal,
            recovered=recovered,
        )
    )
    reported = reply.usage.total_input
    warning = None
    if reported is not None:
        warning = detect_prompt_truncation(reported, estimated, _tools_tokens(offered))
    if warning is not None:
        s.write(WarningRecord("PROMPT_TRUNCATED", warning))
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


def _tools_tokens(offered: Sequence[ToolSpec]) -> int:
    """A rough token size of tool definitions (4 bytes a token): only its magnitude is used."""
    size = sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in offered)
    return size // 4


def record_request(
    s: Session, encoded: EncodedRequest, estimated: int, checkpoint: int | None
) -> str:
    """Record a request about to be sent: the digest and size of its body, and what it was
    built from (the fingerprint an anchor is matched by)."""
    request, body = encoded.request, encoded.body
    entry = s.write(
        ProviderRequest(
            sha256=digest_bytes(body),
            size_bytes=len(body),
            wire=str(s.provider.wire),
            model=request.model,
            fingerprint={
                "model": request.model,
                "effort": request.reasoning_effort,
                "tools_digest": s.tools_digest,
                "config_digest": s.config_digest,
                "checkpoint": checkpoint,
            },
            estimated_input_tokens=estimated,
            output_reserve=request.max_output_tokens,
        )
    )
    return entry.id


def record_resent(s: Session, request_entry: str, resent: Resent) -> None:
    """Record a body the provider POSTed again for the request `request_entry` (a probe, or
    the request unstreamed), so the ledger names every body sent."""
    body = resent.body
    s.write(ProviderResent(request_entry, resent.reason, digest_bytes(body), len(body)))


def error_record(exc: ProviderError) -> ProviderErrorRecord:
    """The `provider.error` record of a failed call."""
    return ProviderErrorRecord(exc.code, exc.message, exc.status)


def error_json(exc: ProviderError) -> JSONObject:
    """The `provider.error` payload of a failed call."""
    return error_record(exc).to_payload()
