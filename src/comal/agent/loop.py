"""The agent loop, on one screen.

user message → build the view (the context engine may project or derive first) → call the
model → record the response → run complete tool calls with write-ahead receipts → repeat.

Invariants kept here:
- nothing is POSTed that the engine's budget says cannot fit (`prepare()` raises instead);
- an incomplete response (OUTPUT_LENGTH) is recorded as discarded and none of its calls run;
  only a larger output reserve is tried, never more context pressure;
- a provider CONTEXT_LENGTH is recovered at most once per turn (recalibrate, then the next
  `prepare()` projects or derives); "input + max_tokens exceed" lowers the reserve instead;
- pressure is re-checked before every model call, i.e. after every batch of tool results.
"""

from __future__ import annotations

import hashlib

from comal.agent.events import (
    AssistantReplied,
    ContextActed,
    Notice,
    ReasoningStreamed,
    ResponseDiscarded,
    TextStreamed,
    ToolFinished,
    ToolStarted,
    TurnStarted,
)
from comal.agent.session import Session
from comal.agent.tool_runner import INVALID_ARGUMENTS_KEY, call_summary
from comal.errors import ContextLengthError, ProviderError, StepLimitError
from comal.messages import JSONObject, Message, ToolCallPart, message_to_json, user_text
from comal.providers.base import (
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
)
from comal.providers.discovery import detect_prompt_truncation
from comal.providers.reply import Reply, collect


async def run_turn(s: Session, text: str | None) -> str:
    """Run one user turn to its final answer and return the answer text.

    Args:
        s: the open session.
        text: the user's message, or None to continue from the ledger as it is (resume).

    Raises:
        ComalError: a typed failure; everything recorded so far stays in the ledger.
    """
    if text is not None:
        s.record("message.user", {"message": message_to_json(user_text(text))})
    overflow_retried = False
    for step in range(1, s.options.max_turns + 1):
        view = s.engine.prepare()
        for action in view.actions:
            s.emit(ContextActed(action, None, view.estimated_tokens, view.checkpoint_number))
        request = ModelRequest(
            model=s.provider.model,
            system=view.system,
            messages=view.messages,
            tools=view.tools,
            max_output_tokens=view.output_reserve,
            reasoning_effort=s.options.reasoning_effort,
        )
        request_entry = _record_request(s, request, view.estimated_tokens, view.checkpoint_number)
        s.emit(TurnStarted(step, view.estimated_tokens, view.measured_base, view.output_reserve))
        try:
            reply = await collect(s.provider.stream(request), on_event=lambda e: _relay(s, e))
        except ContextLengthError as exc:
            s.record("provider.error", _error_json(exc))
            if overflow_retried:
                raise
            overflow_retried = True
            s.engine.on_context_length(exc)
            continue
        except ProviderError as exc:
            s.record("provider.error", _error_json(exc))
            raise
        if reply.finish in ("length", "context_window_exceeded"):
            _discard(s, reply, view.output_reserve)
            continue
        message = _record_reply(s, reply, request_entry, view.estimated_tokens)
        if not message.tool_calls:
            return message.text
        for call in message.tool_calls:
            s.emit(ToolStarted(call.call_id, call.name, call_summary(call)))
            receipt = await s.runner.run(call)
            s.emit(
                ToolFinished(
                    receipt.call_id,
                    receipt.name,
                    receipt.status,
                    receipt.exit_code,
                    receipt.size_bytes,
                    receipt.preview,
                )
            )
        finished = s.finished_answer()  # a successful finish_call closed the session
        if finished is not None:
            s.emit(TextStreamed(finished + "\n"))
            return finished
    raise StepLimitError(f"the turn used all {s.options.max_turns} model calls (--max-turns)")


def _record_reply(s: Session, reply: Reply, request_entry: str, estimated: int) -> Message:
    """Record a finished reply (and a warning if the server seems to have cut the prompt)."""
    message = _with_invalid_calls(reply)
    s.record(
        "message.assistant",
        {
            "message": message_to_json(message),
            "wire": str(s.provider.wire),
            "model": s.provider.model,
            "finish": reply.finish,
            "usage": reply.usage.to_json(),
            "usage_raw": reply.usage_raw,
            "request_entry": request_entry,
        },
    )
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


def _relay(s: Session, event: ProviderEvent) -> None:
    if isinstance(event, TextDelta):
        s.emit(TextStreamed(event.text))
    elif isinstance(event, ReasoningDelta):
        s.emit(ReasoningStreamed(event.text))


def _record_request(
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


def _discard(s: Session, reply: Reply, reserve: int) -> None:
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


def _with_invalid_calls(reply: Reply) -> Message:
    """Keep calls whose arguments were not JSON, so each still gets exactly one (error) result."""
    if not reply.invalid_calls:
        return reply.message
    extra = tuple(
        ToolCallPart(bad.call_id, bad.name, {INVALID_ARGUMENTS_KEY: bad.error})
        for bad in reply.invalid_calls
    )
    return Message("assistant", reply.message.parts + extra)


def _error_json(exc: ProviderError) -> JSONObject:
    return {"code": exc.code, "message": exc.message, "status": exc.status}
