"""Fold a provider event stream into one `Reply`: the assistant message plus its finish and usage.

Parts keep stream order: consecutive text deltas form one `TextPart`, consecutive reasoning
deltas one `ReasoningPart` (the closing delta's `part`, when present, is taken verbatim), and
each tool call a `ToolCallPart` — a call whose arguments did not parse too, in its place, typed
by `invalid` (so it gets its error result where the model made it). Refusal deltas become text
of the message too (the conversation the model sees next stays faithful) and are also kept
apart in `refusal`, so a refusal is reported as one. The last
`UsageReport` wins (wires report cumulative usage). A stream that ends without `Completed`
raises `NetworkError`: a partial reply is never passed off as whole.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from comal.errors import NetworkError
from comal.messages import (
    Finish,
    InvalidArguments,
    JSONObject,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
)
from comal.providers.base import (
    Completed,
    ProviderEvent,
    ReasoningDelta,
    RefusalDelta,
    Resent,
    TextDelta,
    ToolCallDone,
    ToolCallInvalid,
    UsageReport,
)
from comal.usage import Usage


@dataclass(frozen=True, slots=True)
class Reply:
    """A complete model answer."""

    message: Message
    """Role `assistant`: ReasoningPart / TextPart / ToolCallPart in stream order."""
    finish: Finish
    raw_finish: str | None
    usage: Usage
    usage_raw: JSONObject
    refusal: str = ""
    """Text the wire marked as a refusal (Chat `delta.refusal`, Responses refusal parts)."""
    details: JSONObject | None = None
    """The wire's explanation of the finish (Anthropic `stop_details`)."""

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The valid tool calls of the message, in order (`message.tool_calls` has them all)."""
        return tuple(c for c in self.message.tool_calls if c.invalid is None)

    @property
    def invalid_calls(self) -> tuple[ToolCallInvalid, ...]:
        """The calls whose arguments did not parse, as the stream reported them."""
        return tuple(
            ToolCallInvalid(c.call_id, c.name, c.invalid.raw_arguments, c.invalid.error)
            for c in self.message.tool_calls
            if c.invalid is not None
        )

    @property
    def refused(self) -> bool:
        """Whether the model declined to answer."""
        return self.finish is Finish.REFUSAL

    def refusal_text(self) -> str:
        """What the model said in refusing: the marked refusal, else the message's text."""
        return self.refusal or self.message.text

    def refusal_reason(self) -> str:
        """The wire's reason for a refusal (`category: explanation`), or "" when it gives none."""
        if self.details is None:
            return ""
        parts = [self.details.get(k) for k in ("category", "explanation")]
        return ": ".join(p for p in parts if isinstance(p, str) and p)


class _Builder:
    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.text: list[str] = []
        self.reasoning: list[str] = []

    def flush_text(self) -> None:
        if self.text:
            self.parts.append(TextPart("".join(self.text)))
            self.text = []

    def flush_reasoning(self) -> None:
        if self.reasoning:
            # No closing part arrived (e.g. a scripted stream): keep the text, never replayable.
            self.parts.append(ReasoningPart("", "", text="".join(self.reasoning)))
            self.reasoning = []


def _call_part(event: ToolCallDone | ToolCallInvalid) -> ToolCallPart:
    if isinstance(event, ToolCallDone):
        return event.call
    invalid = InvalidArguments(event.raw_arguments, event.error)
    return ToolCallPart(event.call_id, event.name, {}, invalid)


async def collect(
    events: AsyncIterator[ProviderEvent],
    on_event: Callable[[ProviderEvent], None] | None = None,
) -> Reply:
    """Consume a provider stream into a `Reply`.

    Args:
        events: the provider's stream.
        on_event: called with every event as it arrives (UI streaming).

    Raises:
        NetworkError: the stream ended without `Completed`.
        ProviderError: whatever the stream raised.
    """
    build = _Builder()
    usage: Usage = Usage()
    usage_raw: JSONObject = {}
    refusal: list[str] = []
    completed: Completed | None = None
    try:
        async for event in events:
            if completed is not None:
                # Adapters end right after `Completed`; draining (not breaking) lets every
                # nested generator finish in order instead of being finalized concurrently.
                continue
            if on_event is not None:
                on_event(event)
            if isinstance(event, TextDelta | RefusalDelta):
                build.flush_reasoning()
                build.text.append(event.text)
                if isinstance(event, RefusalDelta):
                    refusal.append(event.text)
            elif isinstance(event, ReasoningDelta):
                build.flush_text()
                if event.part is not None:
                    build.reasoning = []
                    build.parts.append(event.part)
                else:
                    build.reasoning.append(event.text)
            elif isinstance(event, ToolCallDone | ToolCallInvalid):
                build.flush_text()
                build.flush_reasoning()
                build.parts.append(_call_part(event))
            elif isinstance(event, UsageReport):
                usage, usage_raw = event.usage, event.raw
            elif isinstance(event, Resent):
                continue  # not part of the reply: the caller records it (`on_event`)
            else:
                completed = event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    if completed is None:
        raise NetworkError("stream ended early: no completion event")
    build.flush_text()
    build.flush_reasoning()
    return Reply(
        message=Message("assistant", tuple(build.parts)),
        finish=completed.finish,
        raw_finish=completed.raw_finish,
        usage=usage,
        usage_raw=usage_raw,
        refusal="".join(refusal),
        details=completed.details,
    )
