"""Pricing a sequence of requests, and aggregating rows.

Per request (summary calls included, in the order they are sent):
- `cached` = the longest common prefix, in o200k tokens, with the previous request;
- cost = new + 0.1 × cached, plus 5 × the output tokens of summary calls and of replies cut
  by the request's output limit (`length`: the request, its cut reply and the re-ask are all
  billed; `replay._cut_replies`); the Anthropic-like
  variant bills new tokens at 1.25 × (cache writes);
- a call sent after the recording was idle longer than the prompt cache's time-to-live (the
  recorded gap since the previous request; `usage.PROMPT_CACHE_TTL_S`) is *cold*: its first request
  is billed with nothing cached, for every policy alike, and the ideal cache starts empty;
- a request *matches its prefix* when it begins with the whole previous request (it only
  appended); `prefix_match_share` = matches / requests that have a predecessor;
- under an *ideal* cache of the policy's own requests, every message version (a rendered part:
  a verbatim message, a preview, a reference stub, a checkpoint block, a summary) is billed in
  full the first time the policy sends it and at 0.1 after, wherever it sits in the request
  (the n-th copy of a text within one request is a version of its own);
  each request's ideal is capped at what the real prefix cache billed for it, and the same
  summary-output terms are added; `cost_vs_own_ideal` = cost / that ideal cost. A policy that
  only appends scores 1.0; one that rewrites early parts of its requests pays for every later
  part again under a prefix cache and scores above 1.
Event regret (`regret.py`): per row, `events` (calls whose request is not an append of the
previous one), `event_regret` (the facts they took out of view that the next 10 calls use,
summed) and `event_list` (each event: call, trigger, sizes before and after, regret, the facts
lost); aggregates sum the first two.
The physical limit bills every content token once at full price: the tokens of the full history
at the last call. Fractions are numbers between 0 and 1.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from comal.messages import JSONObject, JSONValue
from comal.replay.regret import Event
from comal.replay.rendering import Segment, common_prefix_tokens, request_tokens

CACHED_RATE = 0.1
SUMMARY_OUTPUT_RATE = 5.0
ANTHROPIC_NEW_RATE = 1.25


@dataclass(slots=True)
class Totals:
    """Running totals for one (session, policy, window)."""

    previous: tuple[Segment, ...] = ()
    sent: set[tuple[int, int]] = field(default_factory=set)
    """Message versions the policy has already sent: (segment uid, copy number in a request)."""
    input_tokens: int = 0
    cached_tokens: int = 0
    ideal_input_cost: float = 0.0
    """Input cost (new rate 1) under the ideal cache of the policy's own requests."""
    summary_output: int = 0
    summary_input: int = 0
    overflows: int = 0
    calls: int = 0
    sizes: list[int] = field(default_factory=list)
    decision_ms: list[float] = field(default_factory=list)
    facts_total: int = 0
    facts_in_view: int = 0
    facts_reachable: int = 0
    facts_via_index: int = 0
    reserves: list[int] = field(default_factory=list)
    """The output reserve held at each call (no later output known)."""
    projections: int = 0
    derivations: int = 0
    prefix_matches: int = 0
    """Agent requests (after the first) that begin with the whole previous request."""
    cut_replies: int = 0
    """Replies longer than the output their request allowed (each billed, then asked again)."""
    cut_output: int = 0
    """Output tokens of the cut replies (generated up to the limit, then thrown away)."""
    cold_calls: int = 0
    """Calls sent after the recording was idle longer than the cache's time-to-live."""
    events: list[Event] = field(default_factory=list)
    """Calls whose request is not an append of the previous one (`regret.py`)."""
    _expired: bool = False

    def expire(self) -> None:
        """The prompt cache expired (idle beyond its time-to-live): the next request is billed
        in full and the ideal cache forgets what was sent; prefix matching still compares
        with the previous request (whether the policy only appended does not depend on time)."""
        self._expired = True
        self.sent.clear()
        self.cold_calls += 1

    def send(self, request: Sequence[Segment], *, overflow: bool, agent: bool = True) -> int:
        """Price one request (agent call or summary call); returns its tokens."""
        tokens = request_tokens(request)
        cached = common_prefix_tokens(self.previous, request) if self.previous else 0
        if agent and self.previous and cached == request_tokens(self.previous):
            self.prefix_matches += 1
        if self._expired:
            cached, self._expired = 0, False
        real = (tokens - cached) + CACHED_RATE * cached
        ideal = 0.0
        occurrences: dict[int, int] = {}
        for segment in request:
            # The same text twice in one request is two messages: the n-th copy is its own
            # version (a repeated reminder is new the first time it is sent n times).
            number = occurrences.get(segment.uid, 0)
            occurrences[segment.uid] = number + 1
            version = (segment.uid, number)
            ideal += segment.size * (CACHED_RATE if version in self.sent else 1.0)
            self.sent.add(version)
        self.previous = tuple(request)
        self.input_tokens += tokens
        self.cached_tokens += cached
        self.ideal_input_cost += min(ideal, real)
        self.overflows += int(overflow)
        return tokens

    def cost(self, *, ideal: bool = False, new_rate: float = 1.0) -> float:
        """Weighted cost in input-token units (`ideal`: under the ideal cache, new rate 1)."""
        output = SUMMARY_OUTPUT_RATE * (self.summary_output + self.cut_output)
        if ideal:
            return self.ideal_input_cost + output
        new = self.input_tokens - self.cached_tokens
        return new_rate * new + CACHED_RATE * self.cached_tokens + output


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def row(
    totals: Totals,
    *,
    session: str,
    source: str,
    policy: str,
    window: int,
    raw_cost: float,
    physical: int,
) -> JSONObject:
    """One JSON row for a (session, policy, window)."""
    cost = totals.cost()
    return {
        "session": session,
        "source": source,
        "policy": policy,
        "window": window,
        "calls": totals.calls,
        "input_tokens": totals.input_tokens,
        "cached_tokens": totals.cached_tokens,
        "cost_weighted": round(cost, 1),
        "cost_weighted_anthropic": round(totals.cost(new_rate=ANTHROPIC_NEW_RATE), 1),
        "ideal_cost_weighted": round(totals.cost(ideal=True), 1),
        "raw_cost_weighted": round(raw_cost, 1),
        "physical_tokens": physical,
        "ratio_raw": round(_ratio(cost, raw_cost), 4),
        "ratio_physical": round(_ratio(cost, physical), 4),
        "cost_vs_own_ideal": round(_ratio(cost, totals.cost(ideal=True)), 4),
        "overflows": totals.overflows,
        "peak_tokens": max(totals.sizes, default=0),
        "mean_tokens": round(statistics.fmean(totals.sizes), 1) if totals.sizes else 0.0,
        "cache_hit_share": round(_ratio(totals.cached_tokens, totals.input_tokens), 4),
        "facts_total": totals.facts_total,
        "facts_in_view": round(_ratio(totals.facts_in_view, totals.facts_total), 4)
        if totals.facts_total
        else 1.0,
        "facts_reachable": round(_ratio(totals.facts_reachable, totals.facts_total), 4)
        if totals.facts_total
        else 1.0,
        "facts_reachable_via_index": round(_ratio(totals.facts_via_index, totals.facts_total), 4)
        if totals.facts_total
        else 1.0,
        "facts_in_view_count": totals.facts_in_view,
        "facts_reachable_count": totals.facts_reachable,
        "facts_via_index_count": totals.facts_via_index,
        "reserve_min": min(totals.reserves, default=0),
        "reserve_max": max(totals.reserves, default=0),
        "summary_tokens": totals.summary_output,
        "projections": totals.projections,
        "derivations": totals.derivations,
        "prefix_match_share": round(_ratio(totals.prefix_matches, totals.calls - 1), 4)
        if totals.calls > 1
        else 1.0,
        "prefix_matches": totals.prefix_matches,
        "summary_input_tokens": totals.summary_input,
        "cut_replies": totals.cut_replies,
        "cut_output_tokens": totals.cut_output,
        "cold_calls": totals.cold_calls,
        "events": len(totals.events),
        "event_regret": sum(e.regret for e in totals.events),
        "event_list": [e.to_json() for e in totals.events],
        "decision_ms_p50": round(percentile(totals.decision_ms, 0.5), 3),
        "decision_ms_p99": round(percentile(totals.decision_ms, 0.99), 3),
        "decision_ms": [round(v, 3) for v in totals.decision_ms],
    }


def _num(row_: JSONObject, key: str) -> float:
    value = row_.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def aggregate_by_source(rows: Sequence[JSONObject]) -> list[JSONObject]:
    """One aggregate per (source, policy, window), in first-seen order."""
    out: list[JSONObject] = []
    for source in dict.fromkeys(str(r["source"]) for r in rows):
        for item in aggregate([r for r in rows if str(r["source"]) == source]):
            out.append({"source": source, **item})
    return out


def aggregate(rows: Sequence[JSONObject]) -> list[JSONObject]:
    """One aggregate per (policy, window) over all sessions, in first-seen order."""
    groups: dict[tuple[str, int], list[JSONObject]] = {}
    for r in rows:
        groups.setdefault((str(r["policy"]), int(_num(r, "window"))), []).append(r)
    out: list[JSONObject] = []
    for (policy, window), members in groups.items():

        def total(key: str, members: list[JSONObject] = members) -> float:
            return sum(_num(m, key) for m in members)

        cost = total("cost_weighted")
        facts = total("facts_total")
        timings: list[float] = []
        for m in members:
            values = m.get("decision_ms")
            if isinstance(values, list):
                timings.extend(float(v) for v in values if isinstance(v, int | float))
        calls = total("calls")
        mean_tokens = _ratio(sum(_num(m, "mean_tokens") * _num(m, "calls") for m in members), calls)
        item: dict[str, JSONValue] = {
            "policy": policy,
            "window": window,
            "sessions": len(members),
            "calls": int(calls),
            "cost_weighted": round(cost, 1),
            "cost_weighted_anthropic": round(total("cost_weighted_anthropic"), 1),
            "ratio_raw": round(_ratio(cost, total("raw_cost_weighted")), 4),
            "ratio_raw_anthropic": None,
            "ratio_physical": round(_ratio(cost, total("physical_tokens")), 4),
            "cost_vs_own_ideal": round(_ratio(cost, total("ideal_cost_weighted")), 4),
            "overflows": int(total("overflows")),
            "peak_tokens": int(max(_num(m, "peak_tokens") for m in members)),
            "mean_tokens": round(mean_tokens, 1),
            "cache_hit_share": round(_ratio(total("cached_tokens"), total("input_tokens")), 4),
            "facts_total": int(facts),
            "facts_in_view": round(_ratio(total("facts_in_view_count"), facts), 4)
            if facts
            else 1.0,
            "facts_reachable": round(_ratio(total("facts_reachable_count"), facts), 4)
            if facts
            else 1.0,
            "facts_reachable_via_index": round(_ratio(total("facts_via_index_count"), facts), 4)
            if facts
            else 1.0,
            "facts_in_view_count": int(total("facts_in_view_count")),
            "summary_tokens": int(total("summary_tokens")),
            "projections": int(total("projections")),
            "derivations": int(total("derivations")),
            "cut_replies": int(total("cut_replies")),
            "cut_output_tokens": int(total("cut_output_tokens")),
            "cold_calls": int(total("cold_calls")),
            "events": int(total("events")),
            "event_regret": int(total("event_regret")),
            # Over every request that has a predecessor: each session's first has none.
            "prefix_match_share": round(_ratio(total("prefix_matches"), calls - len(members)), 4),
            "decision_ms_p50": round(percentile(timings, 0.5), 3),
            "decision_ms_p99": round(percentile(timings, 0.99), 3),
        }
        out.append(item)
    raw_anthropic = {
        int(_num(a, "window")): _num(a, "cost_weighted_anthropic")
        for a in out
        if a["policy"] == "raw"
    }
    for a in out:
        base = raw_anthropic.get(int(_num(a, "window")))
        a["ratio_raw_anthropic"] = (
            round(_ratio(_num(a, "cost_weighted_anthropic"), base), 4) if base else None
        )
    return out
