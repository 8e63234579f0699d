"""Each replay metric on small hand-made sessions whose answers are worked out here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import toktok

from comal.bench.facts import extract_facts, fact_uses
from comal.bench.metrics import Totals, aggregate, percentile, row
from comal.bench.policies import (
    SUMMARY_OUTPUT_TOKENS,
    Budget,
    Decision,
    LastObservationsPolicy,
    LlmCompactionPolicy,
    OpencodePrunePolicy,
    RawPolicy,
    summary_stand_in,
)
from comal.bench.rendering import SegmentCache, common_prefix_tokens, request_text
from comal.bench.replay import replay_policy
from comal.bench.runner import parse_windows
from comal.bench.transcript import Transcript, transcript_from
from comal.errors import InvariantError
from comal.importers.plan import ParsedSession, SessionPlan
from comal.messages import Message, TextPart, ToolCallPart
from comal.usage import Usage

BIG = Budget(window=1_000_000, reserve=0, margin=0)


def count(text: str) -> int:
    return int(toktok.batch_count([text], "o200k_base")[0])


def encode(text: str) -> list[int]:
    return list(toktok._encoding("o200k_base").encode_ordinary(text))


def session(outputs: list[str], replies: list[str], system: str = "You fix bugs.") -> Transcript:
    """A task, then per output an assistant call (text = reply) and its result; a last reply."""
    plan = SessionPlan(Path("hand.json"), "openai-chat")
    plan.user_text("Fix the failing widget test.")
    for number, (output, reply) in enumerate(zip(outputs, replies, strict=False)):
        call = ToolCallPart(f"c{number}", "bash", {"command": f"step {number}"})
        plan.assistant(
            (TextPart(reply), call), model="m", finish="tool_calls", usage=Usage(), usage_raw=None
        )
        plan.tool_result(f"c{number}", output.encode(), line=None)
    plan.assistant(
        (TextPart(replies[-1]),), model="m", finish="stop", usage=Usage(), usage_raw=None
    )
    parsed = ParsedSession("hand", "hand.json", "hand", "", "", "m", system, plan.done())
    return transcript_from(parsed)


def full_texts(transcript: Transcript, cache: SegmentCache) -> list[str]:
    return [
        request_text(cache.request(transcript.system, transcript.history(c)))
        for c in transcript.calls
    ]


def test_segments_tokenize_exactly_like_the_whole_request() -> None:
    tricky = ["line\n\n", "  trailing spaces  ", "<tag>\n", "ends with >", "", "x\r\n\r\n"]
    transcript = session(tricky, ["ok " * 3] * (len(tricky) + 1), system="sys  \n")
    cache = SegmentCache()
    for call in transcript.calls:
        segments = cache.request(transcript.system, transcript.history(call))
        assert sum(s.size for s in segments) == count(request_text(segments))


def test_raw_cost_is_new_plus_a_tenth_of_the_previous_request() -> None:
    transcript = session(["a.py\nb.py\n", "def frob():\n    return 41\n"], ["look", "read", "done"])
    cache = SegmentCache()
    sizes = [count(t) for t in full_texts(transcript, cache)]
    expected = sizes[0] + sum(
        (sizes[k] - sizes[k - 1]) + 0.1 * sizes[k - 1] for k in range(1, len(sizes))
    )
    anthropic = 1.25 * sizes[0] + sum(
        1.25 * (sizes[k] - sizes[k - 1]) + 0.1 * sizes[k - 1] for k in range(1, len(sizes))
    )

    totals = replay_policy(transcript, RawPolicy(transcript.system), BIG, cache)

    assert totals.calls == 3
    assert totals.sizes == sizes
    assert totals.cost() == pytest.approx(expected)
    assert totals.cost(new_rate=1.25) == pytest.approx(anthropic)
    assert totals.cost(ideal=True) == pytest.approx(expected)
    result = row(totals, session="s", source="x", policy="raw", window=1, raw_cost=expected,
                 physical=sizes[-1])  # fmt: skip
    assert result["ratio_raw"] == 1.0
    assert result["ratio_physical"] == pytest.approx(round(expected / sizes[-1], 4))
    assert result["peak_tokens"] == sizes[-1]
    assert result["mean_tokens"] == pytest.approx(round(sum(sizes) / 3, 1))
    assert result["cache_hit_share"] == pytest.approx(round(sum(sizes[:-1]) / sum(sizes), 4))


def test_the_cached_prefix_is_counted_in_tokens() -> None:
    transcript = session(["alpha beta gamma\n", "delta\n"], ["one", "two", "three"])
    cache = SegmentCache()
    policy = LastObservationsPolicy(transcript.system, keep=1)
    requests = []
    for call in transcript.calls:
        decision = policy.decide(transcript.history(call), call.index)
        requests.append(cache.request(decision.system, decision.messages))
    first, second = request_text(requests[1]), request_text(requests[2])
    a, b = encode(first), encode(second)
    expected = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))

    assert common_prefix_tokens(requests[1], requests[2]) == expected
    assert expected < len(a)


def test_overflow_counts_request_plus_reserve_plus_margin() -> None:
    transcript = session(["x " * 300], ["a", "b"])
    cache = SegmentCache()
    sizes = [count(t) for t in full_texts(transcript, cache)]
    window = sizes[-1] + 100 + 50 - 1

    totals = replay_policy(transcript, RawPolicy(transcript.system), Budget(window, 100, 50), cache)

    assert totals.overflows == 1
    assert Budget(window, 100, 50).overflows(sizes[0]) is False


def test_facts_in_view_and_reachable() -> None:
    outputs = [
        "def frobnicate_widget(): ...  # in src/widgets/core.py line 1472\n",
        "nothing new\n",
        "still nothing\n",
    ]
    replies = ["list", "look", "frobnicate_widget is wrong", "fix src/widgets/core.py"]
    transcript = session(outputs, replies)

    uses = fact_uses(transcript)

    assert [(u.fact, u.call_index) for u in uses] == [
        ("frobnicate_widget", 2),
        ("src/widgets/core.py", 3),
    ]
    cache = SegmentCache()
    raw = replay_policy(transcript, RawPolicy(transcript.system), BIG, cache)
    last1 = replay_policy(transcript, LastObservationsPolicy(transcript.system, keep=1), BIG, cache)
    assert (raw.facts_total, raw.facts_in_view, raw.facts_reachable) == (2, 2, 2)
    assert (last1.facts_total, last1.facts_in_view, last1.facts_reachable) == (2, 0, 0)


def test_fact_tokens() -> None:
    text = "see django/db/models/query.py: has_filters and TimeDelta at 1472, not at 42 or cat"
    assert extract_facts(text) == {
        "django/db/models/query.py",
        "has_filters",
        "TimeDelta",
        "1472",
    }


def test_llm_compaction_bills_the_summary_call_and_hides_facts_in_it() -> None:
    outputs = ["token_alpha_one " + "word " * 1500, "filler " * 1500, "small\n"]
    replies = ["a", "b", "c", "uses token_alpha_one"]
    transcript = session(outputs, replies)
    cache = SegmentCache()
    sizes = [count(t) for t in full_texts(transcript, cache)]
    system_tokens = count(f"<system>\n{transcript.system}\n</system>\n")
    # Compaction fires at the first call whose history passes 0.5 × usable: call 2 here.
    usable = 2 * (sizes[2] - system_tokens) - 1
    assert sizes[1] - system_tokens <= 0.5 * usable
    budget = Budget(usable + 1000, 1000, 0)
    stand_in = summary_stand_in(cache.count)
    policy = LlmCompactionPolicy(
        transcript.system, cache.message_tokens, budget, 0.5, "llm-test", stand_in
    )

    totals = replay_policy(transcript, policy, budget, cache)

    assert count(stand_in) == SUMMARY_OUTPUT_TOKENS
    assert totals.summary_output == SUMMARY_OUTPUT_TOKENS
    # The summary call re-sends the history of call 2 plus the instruction.
    assert totals.summary_input > sizes[2]
    assert totals.input_tokens == sum(totals.sizes) + totals.summary_input
    assert (totals.facts_total, totals.facts_in_view) == (1, 0)
    assert totals.cost() >= totals.summary_output * 5


def test_opencode_prune_protects_the_newest_outputs_and_needs_a_minimum() -> None:
    outputs = [f"out{n} " + "word " * 99 for n in range(6)]
    transcript = session(outputs, ["x"] * 7)
    cache = SegmentCache()
    one = cache.message_tokens((transcript.messages[2],))
    policy = OpencodePrunePolicy(
        transcript.system, cache.message_tokens, protect=2 * one, minimum=2 * one
    )

    decisions = [policy.decide(transcript.history(c), c.index) for c in transcript.calls]

    cleared = [
        [p.call_id for m in d.messages for p in m.tool_results if p.content.startswith("[Old")]
        for d in decisions
    ]
    # Outputs beyond the newest 2 are candidates; pruning waits until more than 2 are freed
    # (call 5: c0..c2), and the walk stops at an output already cleared, so at call 6 only c3
    # would be freed — too little.
    assert cleared[:5] == [[], [], [], [], []]
    assert cleared[5] == ["c0", "c1", "c2"]
    assert cleared[6] == ["c0", "c1", "c2"]


@dataclass
class DropLastResult:
    system: str
    name: str = "splitter"

    def decide(self, history: tuple[Message, ...], _call_index: int, /) -> Decision:
        if history and history[-1].tool_results:
            return Decision(history[:-1], self.system)
        return Decision(history, self.system)


def test_a_policy_that_splits_a_tool_pair_fails_the_replay() -> None:
    transcript = session(["a\n"], ["x", "y"])

    with pytest.raises(InvariantError, match="policy splitter split a tool pair"):
        replay_policy(transcript, DropLastResult(transcript.system), BIG, SegmentCache())


def test_ideal_cache_remembers_every_earlier_prefix() -> None:
    cache = SegmentCache()
    a = cache.request("s", (Message("user", (TextPart("alpha " * 50),)),))
    b = cache.request("s", (Message("user", (TextPart("beta " * 50),)),))
    totals = Totals()
    for request in (a, b, a):
        totals.send(request, overflow=False)
    system = count("<system>\ns\n</system>\n")
    assert totals.cached_tokens == common_prefix_tokens(a, b) * 2
    assert totals.ideal_cached_tokens == common_prefix_tokens(a, b) * 2 + (
        sum(s.size for s in a) - common_prefix_tokens(a, b)
    )
    assert common_prefix_tokens(a, b) >= system


def test_windows_and_percentiles() -> None:
    assert parse_windows("32k,64000, 128k") == [32000, 64000, 128000]
    with pytest.raises(ValueError, match="bad window"):
        parse_windows("64kb")
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == 3.0
    assert percentile([0.0, 10.0], 0.99) == pytest.approx(9.9)


def test_aggregate_has_the_documented_fields() -> None:
    transcript = session(["a.py\n"], ["x", "y"])
    cache = SegmentCache()
    totals = replay_policy(transcript, RawPolicy(transcript.system), BIG, cache)
    one = row(totals, session="s", source="hand", policy="raw", window=64000,
              raw_cost=totals.cost(), physical=totals.sizes[-1])  # fmt: skip

    (item,) = aggregate([one, {**one, "session": "t"}])

    for key in (
        "policy", "window", "calls", "cost_weighted", "cost_weighted_anthropic", "ratio_raw",
        "cost_vs_own_ideal", "overflows", "peak_tokens", "mean_tokens", "cache_hit_share",
        "facts_in_view", "facts_reachable", "summary_tokens", "decision_ms_p50",
        "decision_ms_p99",
    ):  # fmt: skip
        assert key in item
    assert item["calls"] == 2 * totals.calls
    assert item["cost_weighted"] == pytest.approx(2 * round(totals.cost(), 1))
    assert item["ratio_raw"] == 1.0


def test_prefix_match_share_counts_requests_that_only_appended() -> None:
    transcript = session(["alpha beta gamma\n", "delta\n", "eps\n"], ["a", "b", "c", "d"])
    cache = SegmentCache()
    raw = replay_policy(transcript, RawPolicy(transcript.system), BIG, cache)
    # Keeping one observation rewrites the older result on every call after the second.
    last = replay_policy(transcript, LastObservationsPolicy(transcript.system, keep=1), BIG, cache)

    raw_row = row(raw, session="s", source="x", policy="raw", window=1, raw_cost=1, physical=1)
    last_row = row(last, session="s", source="x", policy="l", window=1, raw_cost=1, physical=1)
    assert raw.prefix_matches == 3
    assert raw_row["prefix_match_share"] == 1.0
    assert 0 < last.prefix_matches < 3
    assert last_row["prefix_match_share"] == pytest.approx(round(last.prefix_matches / 3, 4))
    merged = aggregate([raw_row, {**raw_row, "session": "t"}])
    assert merged[0]["prefix_match_share"] == 1.0
    assert merged[0]["projections"] == 0
    assert merged[0]["derivations"] == 0
