"""The agent loop, on one screen.

user message → build the view (the context engine may project or derive first) → call the
model → record the response → run complete tool calls with write-ahead receipts → repeat.

Invariants kept here:
- nothing is POSTed that the engine's budget says cannot fit (`prepare()` raises instead);
- an unfinished response (OUTPUT_LENGTH, a full window) is recorded as discarded and none of
  its calls run (`engine.on_unfinished`); after OUTPUT_LENGTH only a larger output reserve is
  tried, never more context pressure;
- a provider CONTEXT_LENGTH is recovered at most once per turn (recalibrate, then the next
  `prepare()` projects or derives); "input + max_tokens exceed" lowers the reserve instead;
- pressure is re-checked before every model call, i.e. after every batch of tool results;
- a run's first request is prepared with the server's exact count where it offers one, and
  sent on token bounds where they decide it (`first_request`: recorded when its reply starts);
- a refusal ends the turn as `RefusedError` once recorded: it is never passed off as an answer;
- a reply that is a tool call written as text runs as that call when it names an offered tool
  and its arguments validate, else it stands with a notice (`text_calls`).
"""

from __future__ import annotations

import asyncio
from functools import partial

from comal.agent.events import (
    ContextActed,
    Notice,
    ReasoningStreamed,
    Refused,
    ResponseDiscarded,
    TextStreamed,
)
from comal.agent.first_request import RequestRecord, bounded_first
from comal.agent.mentions import mention_message
from comal.agent.recording import error_record, record_reply, record_resent
from comal.agent.server_count import prepare_first
from comal.agent.session import Session
from comal.agent.text_calls import take_text_calls
from comal.errors import (
    BudgetError,
    CompactNotSmallerError,
    ContextLengthError,
    HookBlockedError,
    ProviderError,
    RefusedError,
    StepLimitError,
)
from comal.ledger.records import UserMessage, WarningRecord
from comal.messages import JSONObject, message_to_json, user_text
from comal.providers.base import (
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    Resent,
    TextDelta,
    encode_request,
)
from comal.providers.reply import collect

MAX_STOP_BLOCKS = 3
"""Times Stop hooks may send the model back to work in one turn (no endless loop)."""


async def run_turn(s: Session, text: str | None) -> str:
    """Run one user turn to its final answer and return the answer text.

    Args:
        s: the open session.
        text: the user's message, or None to continue from the ledger as it is (resume).

    Raises:
        ComalError: a typed failure; everything recorded so far stays in the ledger.
    """
    hooks = s.runner.hooks
    if text is not None:
        if hooks is not None and hooks.configured("UserPromptSubmit"):
            verdict = await hooks.run("UserPromptSubmit", {"prompt": text})
            if verdict.blocked:
                raise HookBlockedError(
                    f"a UserPromptSubmit hook blocked the prompt: {verdict.reason}"
                )
            if verdict.context:
                text = f"{text}\n\n{verdict.context}"
        s.write(UserMessage(message_to_json(await mention_message(s, text))))
    overflow_retried = False
    stops = 0
    for step in range(1, s.options.max_turns + 1):
        _check_budget(s)
        bounded = await bounded_first(s) if step == 1 and not overflow_retried else None
        if bounded is not None:
            view = bounded
        else:
            view = await prepare_first(s) if step == 1 else s.engine.prepare()
        if view.compact_refused is not None:
            s.emit(Notice(CompactNotSmallerError.code, view.compact_refused))
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
        # Encoded once: the bytes hashed into the ledger are the bytes sent.
        encoded = encode_request(s.provider, request)
        record = RequestRecord(s, step, encoded, view, bounded=bounded is not None)
        try:
            relay = partial(_relay, s, record)
            reply = await collect(s.provider.send(encoded), on_event=relay)
        except ContextLengthError as exc:
            record.entry()
            s.write(error_record(exc))
            if overflow_retried:
                raise
            overflow_retried = True
            s.engine.on_context_length(exc)
            continue
        except ProviderError as exc:
            record.entry()
            s.write(error_record(exc))
            raise
        except asyncio.CancelledError:
            record.entry()  # sent: the ledger names it, as every body sent
            raise
        finally:
            record.close()
        request_entry, view = record.entry(), record.view
        discarded = s.engine.on_unfinished(reply, view.output_reserve)
        if discarded is not None:
            s.emit(ResponseDiscarded(discarded.reason, discarded.output_reserve))
            continue
        taken = take_text_calls(reply, view.tools)
        reply = taken.reply
        message = record_reply(
            s, reply, request_entry, view.estimated_tokens, taken.recovered, view.tools
        )
        if taken.notice is not None:
            s.write(WarningRecord(*taken.notice))
            s.emit(Notice(*taken.notice))
        if reply.refused:
            s.emit(Refused(reply.refusal_text(), reply.refusal_reason()))
            raise RefusedError(reply.refusal_text(), reply.refusal_reason())
        if not message.tool_calls:
            if hooks is None or not hooks.configured("Stop") or stops >= MAX_STOP_BLOCKS:
                return message.text
            fields: JSONObject = {
                "stop_hook_active": stops > 0,
                "last_assistant_message": message.text,
            }
            verdict = await hooks.run("Stop", fields)
            if not verdict.blocked:
                return message.text
            stops += 1
            s.write(UserMessage(message_to_json(user_text(f"Stop hook: {verdict.reason}"))))
            continue
        await s.run_calls(message.tool_calls)
        if s.runner.feedback:
            note = "\n".join(s.runner.feedback)
            s.runner.feedback.clear()
            s.write(UserMessage(message_to_json(user_text(note))))
        finished = s.finished_answer()  # a successful finish_call closed the session
        if finished is not None:
            s.emit(TextStreamed(finished + "\n"))
            return finished
    raise StepLimitError(f"the turn used all {s.options.max_turns} model calls (--max-turns)")


def _check_budget(s: Session) -> None:
    """A child over its token budget stops before its next model call, never mid-pair."""
    budget = s.options.max_tokens
    if budget is not None and (used := s.tokens_used()) >= budget:
        raise BudgetError(f"the session used {used:,} of its {budget:,}-token budget")


def _relay(s: Session, record: RequestRecord, event: ProviderEvent) -> None:
    """Stream text to the front end as it arrives; record a body sent again beside its request
    (the request itself is recorded by the reply's first event at the latest)."""
    record.entry()
    if isinstance(event, Resent):
        record_resent(s, record.entry(), event)
    elif isinstance(event, TextDelta):
        s.emit(TextStreamed(event.text))
    elif isinstance(event, ReasoningDelta):
        s.emit(ReasoningStreamed(event.text))
