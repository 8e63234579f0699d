"""A prompt cache expires while idle: the replay reads the recorded gaps and bills them.

The recording's own times decide which calls are cold (idle past the cache's time-to-live):
every policy pays such a call uncached, and Comal's engine sees the same gap on its clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.importers.plan import ParsedSession, SessionPlan, recorded_ms
from comal.messages import TextPart
from comal.replay.metrics import CACHED_RATE, Totals
from comal.replay.policies import Budget, RawPolicy
from comal.replay.rendering import SegmentCache, request_tokens
from comal.replay.replayer import replay_policy
from comal.replay.transcript import Transcript, transcript_from
from comal.usage import Usage
from tests.unit.replay.plans import log_step, replay_comal

MINUTE = 60_000


def _log(k: int, lines: int) -> str:
    return "".join(f"log {k} line {i}: took {i * 37 % 101} ms\n" for i in range(lines))


def _session(calls: int, lines: int, gap_before_last_ms: int) -> Transcript:
    """One tool call per step, 5 s apart, and a reply ending the turn; the person's next
    message comes `gap_before_last_ms` later (away from the keyboard), then the last reply."""
    plan = SessionPlan(Path("timed.json"), "openai-chat")
    now = 1_700_000_000_000
    plan.at_ms = now
    plan.user_text("Survey the logs.")
    for number in range(calls):
        now += 5_000
        plan.at_ms = now
        now += 1_000
        log_step(plan, number, _log(number, lines), result_at=now)
    now += 5_000
    plan.at_ms = now
    plan.assistant(
        (TextPart("Read."),), model="m", finish="stop", usage=Usage(output=10), usage_raw=None
    )
    now += gap_before_last_ms
    plan.at_ms = now
    plan.user_text("Now sum the times.")
    now += 2_000
    plan.at_ms = now
    plan.assistant(
        (TextPart("Done."),), model="m", finish="stop", usage=Usage(output=10), usage_raw=None
    )
    parsed = ParsedSession("hand", "timed.json", "hand", "", "", "m", "You read logs.", plan.done())
    return transcript_from(parsed)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-07-17T20:42:59.346Z", 1752784979346),
        ("2025-07-17T22:42:59.346+02:00", 1752784979346),
        ("2025-07-17T20:42:59.346", 1752784979346),  # no offset: read as UTC
        (1752784979.346, 1752784979346),  # seconds, as mini-swe-agent records them
        ("yesterday", None),
        (None, None),
        (True, None),
        (float("nan"), None),
    ],
)
def test_recorded_times_read_as_unix_milliseconds(text: object, expected: int | None) -> None:
    assert recorded_ms(text) == expected


def test_a_call_is_idle_since_the_previous_request_and_since_the_previous_reply() -> None:
    transcript = _session(calls=3, lines=5, gap_before_last_ms=7 * MINUTE)
    first, second, last = transcript.calls[0], transcript.calls[1], transcript.calls[-1]
    assert transcript.idle_ms(first) is None
    # Each request is sent when what it answers was recorded: results 6 s apart.
    assert transcript.idle_ms(second) == 6_000
    assert transcript.since_reply_ms(second) == 1_000
    # The last request is sent with the person's message, 7 minutes after the turn's reply,
    # which came 5 s after the request before it.
    assert transcript.idle_ms(last) == 5_000 + 7 * MINUTE
    assert transcript.since_reply_ms(last) == 7 * MINUTE


def test_an_untimed_recording_has_no_idle() -> None:
    plan = SessionPlan(Path("untimed.json"), "openai-chat")
    plan.user_text("Hi.")
    plan.assistant((TextPart("Hello."),), model="m", finish="stop", usage=Usage(), usage_raw=None)
    plan.user_text("Again.")
    plan.assistant((TextPart("Hello."),), model="m", finish="stop", usage=Usage(), usage_raw=None)
    parsed = ParsedSession("hand", "u.json", "hand", "", "", "m", "", plan.done())
    transcript = transcript_from(parsed)
    assert [transcript.idle_ms(c) for c in transcript.calls] == [None, None]
    assert [transcript.since_reply_ms(c) for c in transcript.calls] == [None, None]
    assert [e.at_ms for e in transcript.entries] == [None] * 4


def test_an_expired_cache_bills_the_next_request_in_full_and_forgets_the_ideal() -> None:
    cache = SegmentCache()
    transcript = _session(calls=2, lines=20, gap_before_last_ms=0)
    requests = [cache.request(transcript.system, transcript.history(c)) for c in transcript.calls]
    warm, cold = Totals(), Totals()
    for number, request in enumerate(requests):
        if number == len(requests) - 1:
            cold.expire()
        warm.send(request, overflow=False)
        cold.send(request, overflow=False)
    previous = request_tokens(requests[-2])
    assert cold.cold_calls == 1
    assert warm.cold_calls == 0
    assert warm.cached_tokens - cold.cached_tokens == previous
    assert cold.cost() - warm.cost() == pytest.approx((1 - CACHED_RATE) * previous)
    # The ideal cache starts empty too: the whole last request is new to it.
    assert cold.ideal_input_cost > warm.ideal_input_cost
    # Whether a policy only appends does not depend on time.
    assert cold.prefix_matches == warm.prefix_matches == len(requests) - 1


@pytest.mark.parametrize(("gap_minutes", "cold"), [(4, 0), (6, 1)])
def test_a_gap_beyond_the_time_to_live_makes_the_next_call_cold_for_every_policy(
    gap_minutes: int, cold: int
) -> None:
    transcript = _session(calls=4, lines=30, gap_before_last_ms=gap_minutes * MINUTE)
    cache = SegmentCache()
    wide = Budget(window=1_000_000, reserve=0, margin=0)
    timed = replay_policy(transcript, RawPolicy(transcript.system), wide, cache)
    timeless = replay_policy(
        transcript, RawPolicy(transcript.system), wide, cache, cache_ttl_s=None
    )
    assert (timed.cold_calls, timeless.cold_calls) == (cold, 0)
    previous = request_tokens(
        cache.request(transcript.system, transcript.history(transcript.calls[-2]))
    )
    assert timed.cost() - timeless.cost() == pytest.approx(cold * (1 - CACHED_RATE) * previous)


def _comal(transcript: Transcript, window: int) -> tuple[list[str], Totals]:
    totals, entries = replay_comal(transcript, window)
    triggers = [
        str(e.payload.get("trigger"))
        for e in entries
        if e.kind in ("checkpoint", "projection") and e.payload.get("by") == "pressure"
    ]
    return triggers, totals


def test_comal_sees_the_recorded_gap_and_relieves_on_the_cold_cache() -> None:
    # Fifteen logs fill a 16k window past where events land but not to its threshold: with the
    # keyboard left for six minutes the cache is cold, and the engine relieves then, for free.
    away = _session(calls=15, lines=60, gap_before_last_ms=6 * MINUTE)
    back_at_once = _session(calls=15, lines=60, gap_before_last_ms=0)
    cold_triggers, cold_totals = _comal(away, 16_000)
    warm_triggers, _ = _comal(back_at_once, 16_000)
    assert warm_triggers == []
    assert cold_triggers == ["cache_cold"]
    assert cold_totals.cold_calls == 1
    assert cold_totals.overflows == 0
