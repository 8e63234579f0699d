"""A recorded session as the replay sees it: the conversation and the model calls in it.

Built from an importer's `ParsedSession` (no ledger needed). For model call *k* the history is
every message the agent had before its *k*-th call. Tool results read exactly as Comal's engine
shows an unelided result (`comal.context.view.rendering.full_text`), so the raw policy and Comal
start from the same bytes; an output that states its own exit code (a mini-swe-agent
observation's `<returncode>`, Codex's output metadata, Gemini CLI's `Exit Code:` line: recorded
as `exit_code_in_output`) reads as the agent sent it, with no trailer repeating it. The peer's
own compaction summaries are left out of every history: each policy manages its context itself,
over the uncompacted recording. Consecutive user-side content (results, then text) is one user
message, as the Anthropic shape requires.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass

from comal.context.view.rendering import full_text
from comal.importers.plan import ParsedSession, PlannedEntry, is_text_action
from comal.ledger.records import AssistantMessage, Kind, ToolResult, UserMessage
from comal.ledger.records import fields as f
from comal.messages import (
    MediaPart,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    canonical_json,
    message_from_json,
)

REPLAYED_KINDS = frozenset({Kind.MESSAGE_USER, Kind.MESSAGE_ASSISTANT, Kind.TOOL_RESULT})
"""Entry kinds the replay feeds to policies (and to Comal's replay ledger)."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """One tool result of the recording: where it sits and its text."""

    message_index: int
    entry_index: int
    call_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ReplayCall:
    """Model call *k*: its history and the response it produced."""

    index: int
    history_end: int
    """Messages before this call: the history is `messages[:history_end]`."""
    entries_end: int
    """Planned entries before this call's `message.assistant`."""
    response: Message
    asked_ms: int | None = None
    """When the request was sent, as the recording tells: the time of the newest entry
    recorded before the response (the results or user text it answers), else the previous
    response's time (nothing came between), None when the format keeps no time."""


@dataclass(frozen=True, slots=True)
class Transcript:
    """The replayable form of one recorded session."""

    label: str
    source: str
    model: str
    system: str
    messages: tuple[Message, ...]
    calls: tuple[ReplayCall, ...]
    outputs: tuple[ToolOutput, ...]
    entries: tuple[PlannedEntry, ...]
    cwd: str = ""

    def history(self, call: ReplayCall) -> tuple[Message, ...]:
        """The messages the agent had before `call`."""
        return self.messages[: call.history_end]

    def idle_ms(self, call: ReplayCall) -> int | None:
        """Time between the previous request and this one (None: first call, or not recorded):
        a prompt cache idle longer than its time-to-live has expired."""
        if call.index == 0 or call.asked_ms is None:
            return None
        before = self.calls[call.index - 1].asked_ms
        return None if before is None else max(call.asked_ms - before, 0)

    def since_reply_ms(self, call: ReplayCall) -> int | None:
        """Time between the previous response and this request (None when not recorded):
        what a live engine measures as idle (`triggers.early_trigger`)."""
        if call.index == 0 or call.asked_ms is None:
            return None
        replied = self.entries[self.calls[call.index - 1].entries_end].at_ms
        return None if replied is None else max(call.asked_ms - replied, 0)

    def output_tokens(self, call: ReplayCall) -> int | None:
        """Output tokens the recorded reply to `call` took (None when not recorded)."""
        usage = AssistantMessage.from_payload(self.entries[call.entries_end].payload).usage
        return None if usage is None else f.int_or_none(usage, "output")

    def reply_tokens(self, call: ReplayCall, count: Callable[[str], int]) -> int:
        """The output the reply to `call` took at least: max(recorded, rendered).

        *Rendered* is the reply's own text and tool-call arguments counted with `count` (the
        harness's ruler; reasoning is not visible, so not counted). A recording can hold less
        than that: Claude Code 1.x writes a streaming snapshot's usage (a 5,492-token reply
        recorded as 4), Codex none at all; the provider billed and limited the whole reply.
        """
        rendered = 0
        for part in call.response.parts:
            if isinstance(part, TextPart):
                rendered += count(part.text)
            elif isinstance(part, ToolCallPart) and not is_text_action(part.call_id):
                # A text action's command is inside the reply's text, already counted.
                rendered += count(canonical_json(part.arguments))
        recorded = self.output_tokens(call)
        return max(recorded or 0, rendered)


def transcript_from(parsed: ParsedSession) -> Transcript:
    """The transcript of one parsed session (children are separate transcripts)."""
    messages: list[Message] = []
    open_user: list[Part] = []
    calls: list[ReplayCall] = []
    outputs: list[ToolOutput] = []

    def close_user() -> None:
        if open_user:
            messages.append(Message("user", tuple(open_user)))
            open_user.clear()

    recorded: int | None = None
    """The newest time recorded so far (records are not always in time order)."""
    for index, planned in enumerate(parsed.entries):
        if planned.kind == Kind.MESSAGE_USER:
            raw = UserMessage.from_payload(planned.payload).message
            assert raw is not None
            open_user.extend(message_from_json(raw).parts)
        elif planned.kind == Kind.TOOL_RESULT:
            result = ToolResult.from_payload(planned.payload)
            status = "ok" if result.status is None else result.status
            # The engine's rule (`ResultFacts.trailer_exit_code`): an output that states its
            # exit code itself, as the agent's model saw it, gets no trailer repeating it.
            code = None if result.exit_code_in_output else result.exit_code
            call_id = str(result.call_id)
            text = full_text(planned.body or b"", status, code)
            media = tuple(
                MediaPart(kind, base64.b64encode(data).decode()) for kind, data in planned.media
            )
            outputs.append(ToolOutput(len(messages), index, call_id, text))
            open_user.append(
                ToolResultPart(call_id, str(result.name), text, result.is_error, media)
            )
        elif planned.kind == Kind.MESSAGE_ASSISTANT:
            close_user()
            raw = AssistantMessage.from_payload(planned.payload).message
            assert raw is not None
            response = message_from_json(raw)
            calls.append(ReplayCall(len(calls), len(messages), index, response, recorded))
            messages.append(response)
        if planned.at_ms is not None:
            recorded = planned.at_ms if recorded is None else max(recorded, planned.at_ms)
    close_user()
    return Transcript(
        label=parsed.label,
        source=parsed.format,
        model=parsed.model,
        system=parsed.system,
        messages=tuple(messages),
        calls=tuple(calls),
        outputs=tuple(outputs),
        entries=parsed.entries,
        cwd=parsed.cwd,
    )


def transcripts_from(parsed: ParsedSession) -> list[Transcript]:
    """The session and each of its children (sub-agent chains), each replayed apart.

    A child that is the peer's own compaction call is left out, like the peer's summaries.
    """
    out = [transcript_from(parsed)]
    for child in parsed.children:
        if not child.compaction:
            out.extend(transcripts_from(child))
    return [t for t in out if t.calls]
