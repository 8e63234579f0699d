"""A recorded session as the replay sees it: the conversation and the model calls in it.

Built from an importer's `ParsedSession` (no ledger needed). For model call *k* the history is
every message the agent had before its *k*-th call. Tool results read exactly as Comal's engine
shows an unelided result (`comal.context.view.rendering.full_text`), so the raw policy and Comal
start from the same bytes; a text action's result reads as the agent sent it (its observation
already holds the return code, so no status trailer is added). The peer's own compaction
summaries are left out of every history: each policy manages its context itself, over the
uncompacted recording. Consecutive user-side content (results, then text) is one user message,
as the Anthropic shape requires.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from comal.context.view.rendering import full_text
from comal.importers.plan import ParsedSession, PlannedEntry, is_text_action
from comal.messages import (
    JSONValue,
    MediaPart,
    Message,
    Part,
    ToolResultPart,
    message_from_json,
)

REPLAYED_KINDS = frozenset({"message.user", "message.assistant", "tool.result"})
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

    def output_tokens(self, call: ReplayCall) -> int | None:
        """Output tokens the recorded reply to `call` took (None when not recorded)."""
        usage = self.entries[call.entries_end].payload.get("usage")
        value = usage.get("output") if isinstance(usage, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None


def _status(payload: dict[str, JSONValue]) -> tuple[str, int | None]:
    status = payload.get("status")
    code = payload.get("exit_code")
    return (
        status if isinstance(status, str) else "ok",
        code if isinstance(code, int) and not isinstance(code, bool) else None,
    )


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

    for index, planned in enumerate(parsed.entries):
        payload = planned.payload
        if planned.kind == "message.user":
            raw = payload["message"]
            assert isinstance(raw, dict)
            open_user.extend(message_from_json(raw).parts)
        elif planned.kind == "tool.result":
            status, code = _status(payload)
            call_id = str(payload["call_id"])
            if is_text_action(call_id):
                code = None
            text = full_text(planned.body or b"", status, code)
            media = tuple(
                MediaPart(kind, base64.b64encode(data).decode()) for kind, data in planned.media
            )
            outputs.append(ToolOutput(len(messages), index, call_id, text))
            open_user.append(
                ToolResultPart(
                    call_id, str(payload["name"]), text, bool(payload.get("is_error")), media
                )
            )
        elif planned.kind == "message.assistant":
            close_user()
            raw = payload["message"]
            assert isinstance(raw, dict)
            response = message_from_json(raw)
            calls.append(ReplayCall(len(calls), len(messages), index, response))
            messages.append(response)
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
