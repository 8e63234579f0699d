"""Each replay metric on small hand-made sessions whose answers are worked out here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import toktok

from comal.errors import InvariantError
from comal.importers.plan import ParsedSession, SessionPlan
from comal.messages import Message, TextPart, ToolCallPart
from comal.replay.facts import extract_facts, fact_uses
from comal.replay.metrics import Totals, aggregate, percentile, row
from comal.replay.policies import (
    SUMMARY_OUTPUT_TOKENS,
    Budget,
    Decision,
    LastObservationsPolicy,
    LlmCompactionPolicy,
    OpencodePrunePolicy,
    RawPolicy,
    opencode_estimate,
    summary_stand_in,
)
from comal.replay.rendering import SegmentCache, common_prefix_tokens, request_text
from comal.replay.replayer import replay_policy
from comal.replay.runner import parse_windows
from comal.replay.transcript import Transcript, transcript_from
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
    # Compaction fires at the first request passing 0.5 × window: call 2 here.
    window = 2 * sizes[2] - 1
    assert sizes[1] <= 0.5 * window
    budget = Budget(window, 0, 0)
    stand_in = summary_stand_in(cache.count)

    def measure(messages: Sequence[Message]) -> int:
        return sum(s.size for s in cache.request(transcript.system, messages))

    policy = LlmCompactionPolicy(
        transcript.system, measure, budget, 0.5, "llm-test", stand_in, less_reserve=False
    )

    totals = replay_policy(transcript, policy, budget, cache)

    assert count(stand_in) == SUMMARY_OUTPUT_TOKENS
    assert totals.summary_output == SUMMARY_OUTPUT_TOKENS
    # The summary call re-sends the history of call 2 plus the instruction.
    assert totals.summary_input > sizes[2]
    assert totals.input_tokens == sum(totals.sizes) + totals.summary_input
    assert (totals.facts_total, totals.facts_in_view) == (1, 0)
    assert totals.cost() >= totals.summary_output * 5


def test_codex_subtracts_the_reserve_and_copilot_does_not() -> None:
    transcript = session(["x\n"], ["a", "b"])
    budget = Budget(100_000, 10_000, 0)
    common = (transcript.system, len, budget)
    codex = LlmCompactionPolicy(*common, 0.9, "codex", "s", less_reserve=True)
    copilot = LlmCompactionPolicy(*common, 0.8, "copilot", "s", less_reserve=False)

    assert codex.threshold(0) == 80_000
    assert copilot.threshold(0) == 80_000


def test_a_summary_call_that_does_not_fit_is_an_overflow() -> None:
    # The second output jumps the request from under the threshold to past the window: the
    # summary call (the whole request plus the instruction) cannot fit.
    transcript = session(["x\n", "word " * 3000], ["a", "b", "c"])
    cache = SegmentCache()
    sizes = [count(t) for t in full_texts(transcript, cache)]
    budget = Budget(sizes[1] * 2, 0, 0)
    assert sizes[2] > budget.window

    def measure(messages: Sequence[Message]) -> int:
        return sum(s.size for s in cache.request(transcript.system, messages))

    policy = LlmCompactionPolicy(
        transcript.system, measure, budget, 0.8, "llm-test", "summary", less_reserve=False
    )
    totals = replay_policy(transcript, policy, budget, cache)

    assert totals.summary_output == SUMMARY_OUTPUT_TOKENS
    assert totals.overflows == 1
    assert max(totals.sizes) < budget.window


def turns_session(turns: list[list[str]]) -> Transcript:
    """Several user turns; in each, one call per output (`out`) and a closing reply."""
    plan = SessionPlan(Path("turns.json"), "openai-chat")
    number = 0
    for turn, outputs in enumerate(turns):
        plan.user_text(f"Request number {turn}.")
        for output in outputs:
            call = ToolCallPart(f"c{number}", "bash", {"command": f"step {number}"})
            plan.assistant((call,), model="m", finish="tool_calls", usage=Usage(), usage_raw=None)
            plan.tool_result(f"c{number}", output.encode(), line=None)
            number += 1
        plan.assistant((TextPart("done"),), model="m", finish="stop", usage=Usage(), usage_raw=None)
    parsed = ParsedSession("hand", "turns.json", "turns", "", "", "m", "sys", plan.done())
    return transcript_from(parsed)


def cleared_at_each_call(transcript: Transcript, policy: OpencodePrunePolicy) -> list[list[str]]:
    out = []
    for call in transcript.calls:
        decision = policy.decide(transcript.history(call), call.index)
        out.append(
            [
                p.call_id
                for m in decision.messages
                for p in m.tool_results
                if p.content == "[Old tool result content cleared]"
            ]
        )
    return out


def test_opencode_prune_never_touches_the_last_two_user_turns() -> None:
    # 100 characters = 25 tokens by opencode's estimate; protect 50, act above 25 freed.
    big = "y" * 100
    transcript = turns_session([[big] * 4, [big] * 4, [big] * 4])
    assert opencode_estimate(big) == 25

    cleared = cleared_at_each_call(
        transcript, OpencodePrunePolicy(transcript.system, protect=50, minimum=25)
    )

    # Turn 0 is calls 0-4, turn 1 calls 5-9, turn 2 calls 10-14. During turns 0 and 1 the
    # walk never passes two user turns, so nothing is pruned although the outputs of turn 0
    # pass the protection by far. In turn 2 only turn 0's outputs are open to pruning: the
    # newest two (c2, c3) are protected, c0 and c1 (50 tokens > 25) are cleared.
    assert all(c == [] for c in cleared[:10])
    assert all(c == ["c0", "c1"] for c in cleared[10:])


def test_opencode_prune_needs_a_minimum_and_stops_at_a_cleared_output() -> None:
    big = "y" * 100
    transcript = turns_session([[big] * 6, [], [], ["z"]])
    policy = OpencodePrunePolicy(transcript.system, protect=50, minimum=75)

    cleared = cleared_at_each_call(transcript, policy)

    # Turn 0: calls 0-6; turns 1 and 2: one call each (7, 8); turn 3: calls 9-10. From call 8
    # turn 0 is open: c4 and c5 are protected, c0..c3 (100 tokens > 75) are cleared; later
    # calls find c3 already cleared and stop there.
    assert all(c == [] for c in cleared[:8])
    assert all(c == ["c0", "c1", "c2", "c3"] for c in cleared[8:])
    small = OpencodePrunePolicy(transcript.system, protect=50, minimum=100)
    assert all(c == [] for c in cleared_at_each_call(transcript, small))


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


def test_the_ideal_bills_each_message_version_once_in_full() -> None:
    cache = SegmentCache()
    task = Message("user", (TextPart("alpha " * 50),))
    a = cache.request("s", (task,))
    b = cache.request("s", (task, Message("user", (TextPart("beta " * 50),))))
    # c drops the task: a prefix cache re-bills beta, the ideal cache does not.
    c = cache.request("s", (Message("user", (TextPart("beta " * 50),)),))
    totals = Totals()
    for request in (a, b, c):
        totals.send(request, overflow=False)
    system, alpha, beta = (s.size for s in b)
    shared = common_prefix_tokens(b, c)  # the system prompt and the `<user>` tag
    assert system < shared < system + beta

    first_two = (system + alpha) + (0.1 * (system + alpha) + beta)
    real = first_two + (0.1 * shared + (system + beta - shared))
    ideal = first_two + (0.1 * system + 0.1 * beta)
    assert totals.cost() == pytest.approx(real)
    assert totals.cost(ideal=True) == pytest.approx(ideal)


def test_the_ideal_never_exceeds_what_the_prefix_cache_billed() -> None:
    cache = SegmentCache()
    a = cache.request("s", (Message("user", (TextPart("same " * 40 + "one"),)),))
    b = cache.request("s", (Message("user", (TextPart("same " * 40 + "two"),)),))
    totals = Totals()
    for request in (a, b):
        totals.send(request, overflow=False)

    # b's text is a new message version, yet most of its tokens were a cached prefix.
    assert totals.cost(ideal=True) == pytest.approx(totals.cost())


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
