"""Checks every view passes before it is sent; a violation raises `InvariantError`.

- Every tool call has exactly one result, in the user message right after its assistant
  message (Anthropic requires this placement; other wires accept it).
- No result without its call, no call id used twice.
- The view fits its budget.

Nothing is patched silently: a missing result is an error here, and recovery appends explicit
results to the ledger instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from comal.errors import InvariantError
from comal.messages import Message


def check_pairs(messages: Sequence[Message]) -> None:
    """Raise unless calls and results pair up exactly, results right after their calls.

    Raises:
        InvariantError: an orphan call or result, a misplaced result, or a duplicate id.
    """
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.role == "assistant":
            calls = [c.call_id for c in message.tool_calls]
            for call_id in calls:
                if call_id in seen:
                    raise InvariantError(f"tool call id {call_id!r} appears twice in the view")
                seen.add(call_id)
            if message.tool_results:
                raise InvariantError(f"assistant message {index} carries tool results")
            if not calls:
                continue
            following = messages[index + 1] if index + 1 < len(messages) else None
            answered = [r.call_id for r in following.tool_results] if following else []
            if following is None or following.role != "user" or answered[: len(calls)] != calls:
                missing = [c for c in calls if c not in answered]
                raise InvariantError(
                    f"tool call(s) {missing or calls} of assistant message {index} have no result"
                    " immediately after it (in call order)"
                )
        else:
            previous = messages[index - 1] if index > 0 else None
            expected = [c.call_id for c in previous.tool_calls] if previous else []
            got = [r.call_id for r in message.tool_results]
            if got != expected[: len(got)] or len(got) not in (0, len(expected)):
                raise InvariantError(f"user message {index} has results {got} for calls {expected}")


def check_fits(estimated_tokens: int, usable_tokens: int) -> None:
    """Raise when a view is larger than the usable room.

    Raises:
        InvariantError: the view does not fit.
    """
    if estimated_tokens > usable_tokens:
        raise InvariantError(
            f"the view needs ~{estimated_tokens:,} tokens but only {usable_tokens:,} are usable"
        )


def check(messages: Sequence[Message], estimated_tokens: int, usable_tokens: int) -> None:
    """All view invariants.

    Raises:
        InvariantError: the first violation found.
    """
    check_pairs(messages)
    check_fits(estimated_tokens, usable_tokens)
