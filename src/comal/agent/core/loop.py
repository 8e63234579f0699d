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

from comal.agent.core.events import (
    ContextActed,
    Notice,
    ReasoningStreamed,
    Refused,
    ResponseDiscarded,
    TextStreamed,
)
from comal.agent.core.first_request import RequestRecord, bounded_first
from comal.agent.core.recording import error_record, record_reply, record_resent
from comal.agent.core.server_count import prepare_first
from comal.agent.core.session import Session
from comal.agent.core.text_calls import take_text_calls
from comal.agent.features.mentions import mention_message
from comal.context.view.build import PreparedView
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
from comal.messages import JSONObject, Message, ToolCallPart, message_to_json, user_text
from comal.providers.base import (
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    Resent,
    TextDelta,
    encode_request,
)
from comal.providers.reply import Reply, collect

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
    if text is not None:
        text = await _prompt_hooks(s, text)
        s.write(UserMessage(message_to_json(await mention_message(s, text))))
    overflow_retried = False
    stops = 0
    for step in range(1, s.options.max_turns + 1):
        _check_budget(s)
        bounded = await bounded_first(s) if step == 1 and not overflow_retried else None
        view = bounded or (await prepare_first(s) if step == 1 else s.engine.prepare())
        record = _request(s, view, step, bounded=bounded is not None)
        try:
            reply = await collect(
                s.provider.send(record.encoded), on_event=partial(_relay, s, record)
            )
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
        message = _recorded_reply(s, reply, record.view, record.entry())
        if message is None:
            continue
        if not message.tool_calls:
            if not await _stop_hooks(s, message.text, stops):
                return message.text
            stops += 1
            continue
        finished = await _run_calls(s, message.tool_calls)
        if finished is not None:
            return finished
    raise StepLimitError(f"the turn used all {s.options.max_turns} model calls (--max-turns)")


async def _prompt_hooks(s: Session, text: str) -> str:
    """The UserPromptSubmit stage: the prompt as the hooks leave it (their context appended).

    Raises:
        HookBlockedError: a hook blocked the prompt (it is not sent).
    """
    hooks = s.runner.hooks
    if hooks is None or not hooks.configured("UserPromptSubmit"):
        return text
    verdict = await hooks.run("UserPromptSubmit", {"prompt": text})
    if verdict.blocked:
        raise HookBlockedError(f"a UserPromptSubmit hook blocked the prompt: {verdict.reason}")
    return f"{text}\n\n{verdict.context}" if verdict.context else text


async def _stop_hooks(s: Session, answer: str, stops: int) -> bool:
    """The Stop stage: whether a hook sends the model back to work (its reason recorded as
    the user's message), at most `MAX_STOP_BLOCKS` times a turn."""
    hooks = s.runner.hooks
    if hooks is None or not hooks.configured("Stop") or stops >= MAX_STOP_BLOCKS:
        return False
    fields: JSONObject = {"stop_hook_active": stops > 0, "last_assistant_message": answer}
    verdict = await hooks.run("Stop", fields)
    if not verdict.blocked:
        return False
    s.write(UserMessage(message_to_json(user_text(f"Stop hook: {verdict.reason}"))))
    return True


def _request(s: Session, view: PreparedView, step: int, *, bounded: bool) -> RequestRecord:
    """The request of `view`, encoded once (the bytes hashed into the ledger are the bytes
    sent); recorded now, or as soon as it is on its way when `bounded` (`first_request`)."""
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
    return RequestRecord(s, step, encode_request(s.provider, request), view, bounded=bounded)


def _recorded_reply(
    s: Session, reply: Reply, view: PreparedView, request_entry: str
) -> Message | None:
    """The reply recorded as the assistant's message, its text calls taken; None when it was
    unfinished (recorded as discarded by the engine).

    Raises:
        RefusedError: the model refused (recorded first).
    """
    discarded = s.engine.on_unfinished(reply, view.output_reserve)
    if discarded is not None:
        s.emit(ResponseDiscarded(discarded.reason, discarded.output_reserve))
        return None
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
    return message


async def _run_calls(s: Session, calls: tuple[ToolCallPart, ...]) -> str | None:
    """Run the reply's calls and hand PostToolUse feedback to the model; the answer when a
    successful finish_call closed the session."""
    await s.run_calls(calls)
    if s.runner.feedback:
        note = "\n".join(s.runner.feedback)
        s.runner.feedback.clear()
        s.write(UserMessage(message_to_json(user_text(note))))
    finished = s.finished_answer()
    if finished is not None:
        s.emit(TextStreamed(finished + "\n"))
    return finished


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
