"""A reply longer than the output its request allowed is cut, billed and asked again."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from comal.context.measure.budget import RESERVE_FLOOR
from comal.importers.plan import ParsedSession, SessionPlan
from comal.ledger.records import AssistantMessage
from comal.messages import TextPart, ToolCallPart
from comal.replay.comal_policy import ComalPolicy
from comal.replay.metrics import SUMMARY_OUTPUT_RATE
from comal.replay.policies import Budget, RawPolicy
from comal.replay.rendering import SegmentCache, request_tokens
from comal.replay.replayer import call_budgets, replay_policy
from comal.replay.transcript import Transcript, transcript_from
from comal.usage import Usage
from tests.unit.replay.plans import log_step, replay_comal


def _session(outputs: list[str], last_reply_tokens: int) -> Transcript:
    """A task, one tool call per output (short replies), then a long final reply."""
    plan = SessionPlan(Path("hand.json"), "openai-chat")
    plan.user_text("Survey the logs.")
    for number, output in enumerate(outputs):
        log_step(plan, number, output)
    plan.assistant(
        (TextPart("The report. " * 50),),
        model="m",
        finish="stop",
        usage=Usage(output=last_reply_tokens),
        usage_raw=None,
    )
    parsed = ParsedSession("hand", "hand.json", "hand", "", "", "m", "You read logs.", plan.done())
    return transcript_from(parsed)


def _log(k: int, lines: int) -> str:
    return "".join(
        f"log {k} line {i}: request {i * 31 % 997} took {i % 89} ms\n" for i in range(lines)
    )


def test_a_peer_reply_longer_than_the_window_leaves_is_billed_with_its_re_ask() -> None:
    transcript = _session([_log(0, 40), _log(1, 40)], last_reply_tokens=5_000)
    cache = SegmentCache()
    last = transcript.calls[-1]
    size = request_tokens(cache.request(transcript.system, transcript.history(last)))
    wide = Budget(window=1_000_000, reserve=0, margin=0)
    tight = Budget(window=size + 1_000, reserve=0, margin=0)

    free = replay_policy(transcript, RawPolicy(transcript.system), wide, cache)
    cut = replay_policy(transcript, RawPolicy(transcript.system), tight, cache)

    assert (free.cut_replies, cut.cut_replies) == (0, 1)
    assert cut.cut_output == 1_000
    assert cut.overflows == 0
    # The cut request, its thrown-away output, then the same request again (all cached).
    extra = 0.1 * size + SUMMARY_OUTPUT_RATE * 1_000
    assert abs(cut.cost() - free.cost() - extra) < 1e-6
    assert cut.calls == free.calls == len(transcript.calls)


def test_comal_records_the_cut_grows_its_reserve_and_is_answered_after_relief() -> None:
    transcript = _session([_log(k, 120) for k in range(6)], last_reply_tokens=6_500)
    budgets = call_budgets(transcript, 16_000)
    totals, entries = replay_comal(transcript, 16_000)

    discarded = [e for e in entries if e.kind == "response.discarded"]
    assert totals.cut_replies == len(discarded) == 1
    allowed = discarded[0].payload["output_reserve"]
    assert isinstance(allowed, int)
    assert allowed < 6_500
    assert totals.cut_output == allowed
    # The larger reserve lowered the threshold: the re-ask was relieved, then held the reply.
    assert totals.derivations + totals.projections >= 1
    assert totals.overflows == 0
    assert totals.reserves[-1] > budgets.reserves[-1]


def test_comal_asks_for_the_room_the_window_leaves_so_a_long_reply_is_not_cut() -> None:
    # Short replies first, then one far longer than twice their 95th percentile: the reserve
    # stays small (the threshold keeps its room), but the request asks for the window's room.
    transcript = _session([_log(k, 20) for k in range(4)], last_reply_tokens=3_000)
    cache = SegmentCache()
    budgets = call_budgets(transcript, 64_000)
    policy = ComalPolicy(transcript, budgets, cache)
    try:
        totals = replay_policy(transcript, policy, budgets, cache)
    finally:
        policy.close()

    assert totals.reserves[-1] < 3_000
    assert totals.cut_replies == 0


def _final_reply(transcript: Transcript, cache: SegmentCache) -> int:
    """Tokens of the last reply's own text, counted independently of the harness's helper."""
    (part,) = transcript.calls[-1].response.parts
    assert isinstance(part, TextPart)
    return cache.count(part.text)


@pytest.mark.parametrize("recorded", [4, None], ids=["streaming-snapshot", "no-usage"])
def test_a_reply_recorded_short_or_without_usage_is_billed_at_its_rendered_size(
    recorded: int | None,
) -> None:
    # Claude Code 1.x records a streamed reply's usage as a snapshot taken early (4 tokens for
    # a reply of thousands); Codex records no output usage. The reply is as long as its text.
    transcript = _session([_log(0, 40), _log(1, 40)], last_reply_tokens=0)
    cache = SegmentCache()
    rendered = _final_reply(transcript, cache)
    transcript = _with_last_usage(transcript, recorded)
    last = transcript.calls[-1]
    size = request_tokens(cache.request(transcript.system, transcript.history(last)))
    room = rendered // 2
    tight = Budget(window=size + room, reserve=0, margin=0)

    cut = replay_policy(transcript, RawPolicy(transcript.system), tight, cache)

    assert transcript.output_tokens(last) == recorded
    assert rendered > 100
    assert (cut.cut_replies, cut.cut_output) == (1, room)
    assert transcript.reply_tokens(last, cache.count) == rendered


@pytest.mark.parametrize("recorded", [4, None], ids=["streaming-snapshot", "no-usage"])
def test_the_reserve_after_such_a_reply_is_sized_from_its_rendered_size(
    recorded: int | None,
) -> None:
    # The Codex-style policy subtracts this reserve from its threshold: sized from a 4-token
    # snapshot it would be the floor, below the reply it must hold.
    plan = SessionPlan(Path("hand.json"), "anthropic-messages")
    plan.user_text("Explain the logs.")
    long_text = "The request took 31 ms because the cache was cold. " * 60
    usage = Usage() if recorded is None else Usage(output=recorded)
    call = ToolCallPart("c0", "bash", {"command": "cat log"})
    plan.assistant(
        (TextPart(long_text), call), model="m", finish="tool_calls", usage=usage, usage_raw=None
    )
    plan.tool_result("c0", _log(0, 5).encode(), line=None)
    plan.assistant((TextPart("Done."),), model="m", finish="stop", usage=usage, usage_raw=None)
    parsed = ParsedSession("hand", "hand.json", "hand", "", "", "m", "You read logs.", plan.done())
    transcript = transcript_from(parsed)
    rendered = SegmentCache().count(long_text) + SegmentCache().count('{"command":"cat log"}')

    reserves = call_budgets(transcript, 64_000).reserves

    assert rendered > 2 * RESERVE_FLOOR
    assert reserves[0] == 4_096
    assert reserves[1] >= rendered


def _with_last_usage(transcript: Transcript, output: int | None) -> Transcript:
    """The transcript with the last reply's recorded output replaced (None: no usage)."""
    entries = list(transcript.entries)
    index = transcript.calls[-1].entries_end
    payload = dict(entries[index].payload)
    payload["usage"] = None if output is None else Usage(output=output).to_json()
    entries[index] = replace(entries[index], record=AssistantMessage.from_payload(payload))
    parsed = ParsedSession(
        "hand", "hand.json", "hand", "", "", "m", transcript.system, tuple(entries)
    )
    return transcript_from(parsed)
