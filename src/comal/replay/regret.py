"""Event regret: the facts an event took out of view that the next calls use.

An *event* is a call whose request does not begin with the whole previous request: a Comal
projection or checkpoint, a peer's summary, prune or mask change (an append is no event). Its
*regret* is the number of facts (`facts.py`: identifiers, paths and numbers an earlier tool
output introduced) that the previous request's text held, that this request's text does not,
and that a reply among the next `HORIZON` calls (this one included) writes — each fact once per
event, whichever of those calls uses it, and every use counted, not only a fact's first.
A policy that only appends has no event, so no regret; what an event costs in facts is what
these figures add up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.messages import JSONObject, JSONValue

HORIZON = 10
"""Calls after an event (the event's own call included) whose facts it is charged with."""
SHOWN_FACTS = 12
"""Lost facts kept per event in the JSON and `--explain` (the count is always whole)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One event of one policy: where, why, how large before and after, what it lost."""

    call: int
    trigger: str
    before: int
    """Tokens of the previous request."""
    landing: int
    """Tokens of this request (the size the event landed at)."""
    lost: tuple[str, ...]
    """Facts taken out of view that the next `HORIZON` calls use, sorted."""

    @property
    def regret(self) -> int:
        """How many facts the event took out of view that the next calls use."""
        return len(self.lost)

    def to_json(self) -> JSONObject:
        """The event as the report's JSON stores it (at most `SHOWN_FACTS` facts named)."""
        lost: list[JSONValue] = list(self.lost[:SHOWN_FACTS])
        return {
            "call": self.call,
            "trigger": self.trigger,
            "before": self.before,
            "landing": self.landing,
            "regret": self.regret,
            "lost": lost,
        }


def upcoming(by_call: Sequence[frozenset[str]], call: int) -> frozenset[str]:
    """Facts the replies of calls `call` … `call + HORIZON - 1` write."""
    out: set[str] = set()
    for facts in by_call[call : call + HORIZON]:
        out |= facts
    return frozenset(out)


def lost_facts(previous: str, current: str, wanted: frozenset[str]) -> tuple[str, ...]:
    """The facts of `wanted` in the previous request's text and not in this one's."""
    return tuple(sorted(f for f in wanted if f in previous and f not in current))


def trigger_of(policy: str, actions: Sequence[str], summarized: bool) -> str:
    """What caused an event: Comal's recorded actions, a peer's summary, or the peer's own
    rewrite (its mask, elision or prune moved)."""
    if actions:
        return "+".join(dict.fromkeys(actions))
    if summarized:
        return "summary"
    return {
        "swe-agent-last5": "elision",
        "masking-m10": "mask",
        "opencode-prune": "prune",
    }.get(policy, "rewrite")
