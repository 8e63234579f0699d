"""Facts used later: what the replay checks each policy kept within reach.

A *fact* is an identifier, a path or a number that first appears in a tool output (it occurred
nowhere earlier: not in the system prompt, a user message, an assistant message or an earlier
output) and that the assistant later writes in a response (text or tool-call arguments). Each
fact counts once, at its first use after the output that introduced it: at that call the fact is
*in view* when the request's canonical text contains it, and *reachable* when in view or (for
Comal) inside a tool output the request names by an exact reference.

Tokens:
- identifiers: words of 5+ characters holding `_` or an inner capital (`has_filters`,
  `TimeDelta`);
- paths: two or more `/`-separated components (`django/db/models/sql/query.py`);
- numbers: 3+ digits, with optional decimal or dotted parts (`1472`, `0.345`, `4.2.1`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from comal.messages import Message, TextPart, ToolCallPart, canonical_json
from comal.replay.transcript import Transcript

_FACT = re.compile(
    r"""(?x)
    (?:[\w.@-]*/)+[\w.@-]+              # paths
  | \b\d{3,}(?:\.\d+)*\b              # numbers
  | \b\d+\.\d+(?:\.\d+)*\b
  | \b[A-Za-z_][A-Za-z0-9_]{4,}\b     # identifier candidates (filtered below)
    """
)


def _is_fact(token: str) -> bool:
    if "/" in token:
        parts = [p for p in token.split("/") if p]
        return len(parts) >= 2
    if token[0].isdigit():
        return sum(c.isdigit() for c in token) >= 3
    if "_" in token.strip("_"):
        return True
    return any(a.islower() and b.isupper() for a, b in itertools.pairwise(token))


def extract_facts(text: str) -> set[str]:
    """Fact tokens of a text."""
    return {t for t in _FACT.findall(text) if _is_fact(t)}


def _message_text(message: Message) -> str:
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ToolCallPart):
            pieces.append(canonical_json(part.arguments))
    return "\n".join(pieces)


@dataclass(frozen=True, slots=True)
class FactUse:
    """A fact and the call that first uses it."""

    fact: str
    call_index: int
    sources: tuple[int, ...]
    """Planned-entry indices of the tool outputs before that call that contain the fact."""


def fact_uses(transcript: Transcript) -> tuple[FactUse, ...]:
    """Every fact of `transcript` with its first later use, in call order."""
    seen = extract_facts(transcript.system)
    origin: dict[str, int] = {}
    outputs_at: dict[int, list[int]] = {}
    for number, output in enumerate(transcript.outputs):
        outputs_at.setdefault(output.message_index, []).append(number)
    uses: list[FactUse] = []
    used: set[str] = set()
    next_output = 0
    for index, message in enumerate(transcript.messages):
        if message.role == "assistant":
            call = next(c for c in transcript.calls if c.history_end == index)
            for fact in sorted(extract_facts(_message_text(message))):
                if fact in origin and fact not in used:
                    used.add(fact)
                    sources = tuple(
                        o.entry_index for o in transcript.outputs[:next_output] if fact in o.text
                    )
                    uses.append(FactUse(fact, call.index, sources))
            seen |= extract_facts(_message_text(message))
            continue
        for number in outputs_at.get(index, []):
            next_output = max(next_output, number + 1)
            for fact in extract_facts(transcript.outputs[number].text):
                if fact not in seen:
                    origin.setdefault(fact, number)
                    seen.add(fact)
        seen |= extract_facts(_message_text(message))
    return tuple(uses)


def facts_by_call(transcript: Transcript) -> tuple[frozenset[str], ...]:
    """For each call, every fact its reply writes that an earlier tool output introduced (each
    use, not only the first: what event regret asks of the calls after an event)."""
    seen = extract_facts(transcript.system)
    origin: set[str] = set()
    by_call: list[frozenset[str]] = []
    outputs_at: dict[int, list[int]] = {}
    for number, output in enumerate(transcript.outputs):
        outputs_at.setdefault(output.message_index, []).append(number)
    for index, message in enumerate(transcript.messages):
        if message.role == "assistant":
            written = extract_facts(_message_text(message))
            by_call.append(frozenset(written & origin))
            seen |= written
            continue
        for number in outputs_at.get(index, []):
            for fact in extract_facts(transcript.outputs[number].text):
                if fact not in seen:
                    origin.add(fact)
                    seen.add(fact)
        seen |= extract_facts(_message_text(message))
    return tuple(by_call)
