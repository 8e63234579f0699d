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
from operator import is_

from comal.errors import InvariantError
from comal.messages import Message


def check_pairs(messages: Sequence[Message]) -> None:
    """Raise unless calls and results pair up exactly, results right after their calls.

    Raises:
        InvariantError: an orphan call or result, a misplaced result, or a duplicate id.
    """
    _check_pairs(messages, 0, [], [])


def _check_pairs(
    messages: Sequence[Message], start: int, ids: list[str], counts: list[int]
) -> None:
    """`check_pairs` from message `start` on, `ids` holding the call ids of the assistant
    messages before it (in order); appends to `ids` and, per message checked, to `counts`
    how many ids came before it."""
    seen = set(ids)
    for index in range(start, len(messages)):
        message = messages[index]
        counts.append(len(ids))
        if message.role == "assistant":
            calls = [c.call_id for c in message.tool_calls]
            for call_id in calls:
                if call_id in seen:
                    raise InvariantError(f"tool call id {call_id!r} appears twice in the view")
                seen.add(call_id)
                ids.append(call_id)
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


class PairChecker:
    """`check_pairs`, re-checking only what changed since the last view that passed.

    A message's check depends on itself, its two neighbours and the call ids of the assistant
    messages before it. When a view starts with the messages of the last one checked (the same
    objects: between events a view only grows by appending), every one but the last of those
    passed against the same neighbours and ids, so the check resumes at that last one and
    raises exactly what `check_pairs` would.
    """

    def __init__(self) -> None:
        self._messages: tuple[Message, ...] = ()
        self._ids: list[str] = []
        self._counts: list[int] = []

    def check(self, messages: Sequence[Message]) -> None:
        """Raise what `check_pairs(messages)` raises.

        Raises:
            InvariantError: an orphan call or result, a misplaced result, or a duplicate id.
        """
        view = tuple(messages)
        old = self._messages
        kept = min(len(old), len(view))
        while kept and old[kept - 1] is not view[kept - 1]:
            kept -= 1
        if not all(map(is_, old[:kept], view[:kept])):
            kept = 0
        start = max(kept - 1, 0)
        ids = self._ids[: self._counts[start]] if start else []
        counts = self._counts[:start]
        self._messages = ()
        _check_pairs(view, start, ids, counts)
        self._messages, self._ids, self._counts = view, ids, counts


def check_fits(estimated_tokens: int, usable_tokens: int) -> None:
    """Raise when a view is larger than the usable room.

    Raises:
        InvariantError: the view does not fit.
    """
    if estimated_tokens > usable_tokens:
        raise InvariantError(
            f"the view needs ~{estimated_tokens:,} tokens but only {usable_tokens:,} are usable"
        )


def check(
    messages: Sequence[Message],
    estimated_tokens: int,
    usable_tokens: int,
    pairs: PairChecker | None = None,
) -> None:
    """All view invariants (`pairs`: the checker that saw this session's earlier views).

    Raises:
        InvariantError: the first violation found.
    """
    if pairs is None:
        check_pairs(messages)
    else:
        pairs.check(messages)
    check_fits(estimated_tokens, usable_tokens)
