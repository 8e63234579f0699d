"""The replay benchmark: recorded sessions, call by call, through context policies, no model.

For each transcript, window and policy, every model call's request is rendered canonically
(`rendering.py`), checked (every tool call paired with its result in the next message — a
policy that splits a pair fails the replay loudly), priced (`metrics.py`) and searched for the
facts the assistant uses at that call (`facts.py`).

No hindsight: the output reserve of call *k* is sized from the outputs of the replies before
*k* only. Comal's engine sizes its own, from the ledger it has been fed (its live rule); for every
other policy, and for judging their overflows, the harness applies the same rule to the same
recorded outputs (`context.budget.size_output_reserve`: twice the 95th percentile of earlier
outputs, 256 … min(32,000, window / 2), 4,096 before any). The margin is
`context.budget.default_margin(window)`.

Time is read from the recording where its format keeps it: a call after a gap longer than the
prompt cache's time-to-live (`PROMPT_CACHE_TTL_S`) is billed uncached for every policy, and Comal's
engine sees the same gap on its clock (an idle cache lets it relieve pressure early, for no
extra re-send: `context/relief/triggers.py`).

A reply is billed at max(recorded, rendered) output tokens (`Transcript.reply_tokens`: the
recording may hold a streaming snapshot's partial usage, or none), and a reply longer than the
output its request allowed is a cut reply (`_cut_replies`): the cut request, its thrown-away
output and the re-ask are billed, so a reserve smaller than the replies it must hold is not
free. Every reserve, the harness's and Comal's engine's, is sized from those complete outputs.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from comal.context.measure.budget import default_margin, size_output_reserve
from comal.errors import InvariantError
from comal.ids import reproducible_ids
from comal.importers import parse_sessions
from comal.importers.claude_code import is_subagent_file
from comal.messages import JSONObject, Message
from comal.replay.facts import FactUse, fact_uses, facts_by_call
from comal.replay.images import provider_of
from comal.replay.metrics import Totals, row
from comal.replay.oracle import Landing, OraclePolicy, schedule_of
from comal.replay.policies import (
    Budget,
    Budgets,
    CallBudgets,
    Decision,
    LastObservationsPolicy,
    LlmCompactionPolicy,
    ObservationMaskingPolicy,
    OpencodePrunePolicy,
    Policy,
    RawPolicy,
    summary_stand_in,
)
from comal.replay.regret import Event, lost_facts, trigger_of, upcoming
from comal.replay.rendering import (
    Segment,
    SegmentCache,
    common_prefix_tokens,
    request_text,
    request_tokens,
)
from comal.replay.transcript import Transcript, transcripts_from
from comal.usage import PROMPT_CACHE_TTL_S

POLICIES = (
    "raw",
    "swe-agent-last5",
    "masking-m10",
    "opencode-prune",
    "llm-compaction-80",
    "llm-compaction-90",
    "comal",
    "oracle",
)
"""Policy names, in report order (`oracle` follows Comal's schedule: Comal is replayed first)."""
MAX_OUTPUT_TOKENS = 32_000
"""The engine's default maximum output (the cap of the sized reserve)."""


def call_budgets(
    transcript: Transcript, window: int, outputs: Sequence[int] | None = None
) -> CallBudgets:
    """The reserve of each call from the outputs of the replies before it, and the margin.

    `outputs` are the replies' complete outputs (`complete_outputs`; computed when None): a
    partial snapshot of a streamed reply, or a reply recorded with no usage, would size a
    reserve far below what the replies really take. The same numbers Comal's engine sizes for
    itself from the same outputs (its cap is the maximum output, at most half the window:
    `ContextEngine.output_reserve`); a test holds them equal.
    """
    if outputs is None:
        outputs = complete_outputs(transcript, SegmentCache())
    cap = min(MAX_OUTPUT_TOKENS, max(window // 2, 1))
    earlier: list[int] = []
    reserves: list[int] = []
    for call in transcript.calls:
        reserves.append(size_output_reserve(earlier, [], max_output=cap))
        earlier.append(outputs[call.index])
    return CallBudgets(window, default_margin(window), tuple(reserves))


def complete_outputs(transcript: Transcript, cache: SegmentCache) -> tuple[int, ...]:
    """Each call's reply at max(recorded, rendered) output tokens (`Transcript.reply_tokens`)."""
    return tuple(transcript.reply_tokens(call, cache.count) for call in transcript.calls)


def make_policy(
    name: str,
    transcript: Transcript,
    budget: Budgets,
    cache: SegmentCache,
    cache_ttl_s: float = PROMPT_CACHE_TTL_S,
) -> Policy:
    """A fresh policy instance for one (session, window) replay (`cache_ttl_s`: what Comal's
    engine is told of the prompt cache; no peer policy looks at time).

    Raises:
        ValueError: unknown policy name.
    """
    system = transcript.system
    if name == "raw":
        return RawPolicy(system)
    if name == "swe-agent-last5":
        return LastObservationsPolicy(system)
    if name == "masking-m10":
        return ObservationMaskingPolicy(system)
    if name == "opencode-prune":
        return OpencodePrunePolicy(system)
    if name in ("llm-compaction-80", "llm-compaction-90"):
        codex = name.endswith("90")
        stand_in = summary_stand_in(cache.count)

        def measure(messages: Sequence[Message]) -> int:
            return request_tokens(cache.request(system, messages))

        ratio = 0.9 if codex else 0.8
        return LlmCompactionPolicy(
            system, measure, budget, ratio, name, stand_in, less_reserve=codex
        )
    if name == "comal":
        from comal.replay.comal_policy import ComalPolicy  # the engine is only needed here

        return ComalPolicy(transcript, budget, cache, cache_ttl_s=cache_ttl_s)
    if name == "oracle":
        raise ValueError("the oracle follows Comal's replay: `replay_transcript` builds it")
    raise ValueError(f"unknown policy {name!r}; one of {', '.join(POLICIES)}")


def check_pairs(messages: Sequence[Message], *, policy: str, label: str, call: int) -> None:
    """Every tool call answered in the next message, every result answering the previous one.

    Raises:
        InvariantError: a policy split a tool pair.
    """
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        wanted = [c.call_id for c in message.tool_calls]
        following = messages[index + 1] if index + 1 < len(messages) else None
        got = [r.call_id for r in following.tool_results] if following is not None else []
        if wanted and sorted(wanted) != sorted(got):
            raise InvariantError(
                f"policy {policy} split a tool pair in {label} at call {call}: "
                f"calls {wanted} answered by {got}"
            )
    for index, message in enumerate(messages):
        if message.role == "user" and message.tool_results:
            previous = messages[index - 1] if index else None
            calls = {c.call_id for c in previous.tool_calls} if previous is not None else set()
            orphans = [r.call_id for r in message.tool_results if r.call_id not in calls]
            if orphans:
                raise InvariantError(
                    f"policy {policy} sent results {orphans} without their calls "
                    f"in {label} at call {call}"
                )


def _max_output(decision: Decision, budget: Budget, size: int) -> int:
    """The most output the request allows: what the policy asks for, within the window."""
    room = max(budget.window - size, 0)
    return room if decision.max_output is None else min(decision.max_output, room)


def _cut_replies(
    policy: Policy,
    decision: Decision,
    budget: Budget,
    request: tuple[Segment, ...],
    size: int,
    output: int,
    totals: Totals,
    cache: SegmentCache,
) -> tuple[Decision, Budget, tuple[Segment, ...], int]:
    """Bill the replies the request's output limit would have cut, and the re-asks.

    A recorded reply longer than the output the request allows is cut by `length` live: the
    cut request is billed (its output too, at the output rate), then the policy asks again —
    Comal records the `response.discarded`, grows its reserve and prepares again, as its loop
    does; a peer re-sends the same request once. A reserve smaller than the replies it must
    hold is therefore paid for here, not free. Returns the request finally answered.
    """
    again = getattr(policy, "after_cut", None)
    while not budget.overflows(size):
        allowed = _max_output(decision, budget, size)
        if output <= allowed:
            break
        # Not an agent request of its own: the re-ask that follows is this call's request.
        totals.send(request, overflow=False, agent=False)
        totals.cut_replies += 1
        totals.cut_output += allowed
        retried = again(allowed, size) if again is not None else None
        if retried is None:
            break
        decision = retried
        check_pairs(decision.messages, policy=policy.name, label="a re-ask", call=-1)
        if decision.reserve is not None:
            budget = replace(budget, reserve=decision.reserve)
        request = cache.request(decision.system, decision.messages)
        size = request_tokens(request)
        totals.projections += decision.actions.count("projection")
        totals.derivations += decision.actions.count("checkpoint")
    return decision, budget, request, size


def replay_policy(
    transcript: Transcript,
    policy: Policy,
    budgets: Budgets,
    cache: SegmentCache,
    uses: dict[int, list[FactUse]] | None = None,
    cache_ttl_s: float | None = PROMPT_CACHE_TTL_S,
) -> Totals:
    """Replay one policy over one transcript and return its running totals.

    Args:
        transcript: the recorded session.
        policy: a fresh policy instance.
        budgets: the reserve and margin of each call (a policy may hold its own reserve).
        cache: the transcript's segment cache.
        uses: facts by the call that first uses them (computed when None).
        cache_ttl_s: the prompt cache's time-to-live; a call after a longer recorded gap is
            billed uncached (None: the cache never expires).

    Raises:
        InvariantError: the policy split a tool pair.
    """
    if uses is None:
        uses = {}
        for use in fact_uses(transcript):
            uses.setdefault(use.call_index, []).append(use)
    outputs = complete_outputs(transcript, cache)
    by_call = facts_by_call(transcript)
    last: tuple[Segment, ...] = ()
    """The previous agent request (the one the model saw before this call)."""
    totals = Totals()
    feed = getattr(policy, "feed", None)
    for call in transcript.calls:
        history = transcript.history(call)
        idle = transcript.idle_ms(call)
        if cache_ttl_s is not None and idle is not None and idle > cache_ttl_s * 1000:
            totals.expire()
        if feed is not None:
            feed(call.entries_end)
        started = time.perf_counter()
        decision = policy.decide(history, call.index)
        totals.decision_ms.append((time.perf_counter() - started) * 1000)
        check_pairs(decision.messages, policy=policy.name, label=transcript.label, call=call.index)
        budget = budgets.at(call.index)
        if decision.reserve is not None:
            budget = replace(budget, reserve=decision.reserve)
        if decision.summary_request is not None:
            summary = cache.request(decision.system, decision.summary_request)
            size = request_tokens(summary)
            totals.summary_input += totals.send(
                summary, overflow=budget.overflows(size), agent=False
            )
            totals.summary_output += decision.summary_output_tokens
        request = cache.request(decision.system, decision.messages)
        size = request_tokens(request)
        decision, budget, request, size = _cut_replies(
            policy, decision, budget, request, size, outputs[call.index], totals, cache
        )
        totals.reserves.append(budget.reserve)
        if last and common_prefix_tokens(last, request) != request_tokens(last):
            wanted = upcoming(by_call, call.index)
            lost = lost_facts(request_text(last), request_text(request), wanted) if wanted else ()
            summarized = decision.summary_request is not None
            trigger = trigger_of(policy.name, decision.actions, summarized)
            totals.events.append(Event(call.index, trigger, request_tokens(last), size, lost))
        last = request
        totals.send(request, overflow=budget.overflows(size))
        totals.sizes.append(size)
        totals.calls += 1
        totals.projections += decision.actions.count("projection")
        totals.derivations += decision.actions.count("checkpoint")
        here = uses.get(call.index)
        if here:
            text = request_text(request)
            for use in here:
                in_view = use.fact in text
                named = in_view or any(s in decision.reachable_refs for s in use.sources)
                totals.facts_total += 1
                totals.facts_in_view += int(in_view)
                totals.facts_reachable += int(named)
                totals.facts_via_index += int(
                    named or (decision.reachable_all and bool(use.sources))
                )
    return totals


def replay_transcript(
    transcript: Transcript,
    windows: Sequence[int],
    policies: Sequence[str],
    *,
    name: str | None = None,
    cache_ttl_s: float | None = PROMPT_CACHE_TTL_S,
) -> list[JSONObject]:
    """Rows for every (window, policy) of one transcript; `raw` is always replayed (baseline).

    `name` is the row's `session` (default the transcript's label); `cache_ttl_s` as in
    `replay_policy`.
    """
    cache = SegmentCache(images=provider_of(transcript.model, transcript.source))
    uses: dict[int, list[FactUse]] = {}
    for use in fact_uses(transcript):
        uses.setdefault(use.call_index, []).append(use)
    last = transcript.calls[-1]
    physical = request_tokens(cache.request(transcript.system, transcript.history(last)))
    rows: list[JSONObject] = []
    names = ["raw", *[p for p in policies if p not in ("raw", "comal", "oracle")]]
    if "comal" in policies or "oracle" in policies:
        names.append("comal")  # the oracle's schedule is Comal's
    if "oracle" in policies:
        names.append("oracle")
    every_use = [u for found in uses.values() for u in found]
    for window in windows:
        budget = call_budgets(transcript, window, complete_outputs(transcript, cache))
        raw_cost = 0.0
        schedule: dict[int, Landing] = {}
        comal_sizes: tuple[int, ...] = ()
        for policy_name in names:
            # The same transcript, window and policy mint the same ids on every run.
            seed = f"{name or transcript.label}\0{window}\0{policy_name}"
            with reproducible_ids(seed):
                ttl = math.inf if cache_ttl_s is None else cache_ttl_s
                if policy_name == "oracle":
                    policy: Policy = OraclePolicy(
                        transcript, cache, schedule, every_use, comal_sizes
                    )
                else:
                    policy = make_policy(policy_name, transcript, budget, cache, ttl)
                try:
                    totals = replay_policy(transcript, policy, budget, cache, uses, cache_ttl_s)
                finally:
                    close = getattr(policy, "close", None)
                    if close is not None:
                        close()
            if policy_name == "comal":
                schedule, comal_sizes = schedule_of(totals.events), tuple(totals.sizes)
            if policy_name == "raw":
                raw_cost = totals.cost()
            if policy_name not in policies:
                continue
            rows.append(
                row(
                    totals,
                    session=name or transcript.label,
                    source=transcript.source,
                    policy=policy_name,
                    window=window,
                    raw_cost=raw_cost,
                    physical=physical,
                )
            )
    return rows


def replay_file(
    path: str,
    windows: Sequence[int],
    policies: Sequence[str],
    fmt: str | None = None,
    cache_ttl_s: float | None = PROMPT_CACHE_TTL_S,
) -> list[JSONObject]:
    """Rows for every transcript in one recorded file (a worker's unit of work).

    Raises:
        ImportFormatError: the file cannot be read as a recorded session.
    """
    rows: list[JSONObject] = []
    folder = Path(path).parent.name
    parsed = parse_sessions(Path(path), fmt)
    for transcript in (t for session in parsed for t in transcripts_from(session)):
        # The folder keeps names unique: the same task recorded by two agents has one stem.
        name = f"{folder}/{transcript.label}" if folder else transcript.label
        rows.extend(
            replay_transcript(transcript, windows, policies, name=name, cache_ttl_s=cache_ttl_s)
        )
    return rows


def found_files(paths: Sequence[Path]) -> list[tuple[Path, str]]:
    """Recorded session files under `paths`, each with its path relative to the PATH it was
    found under (POSIX form; a file given itself is its own name): the key `split_of` hashes."""
    return survey(paths)[0]


def survey(
    paths: Sequence[Path],
) -> tuple[list[tuple[Path, str]], list[tuple[Path, str, str]]]:
    """The session files under `paths` (as `found_files`), and every other file of the folders
    searched that no importer reads: (path, relative path, why). Sub-agent transcripts beside
    their parent's file are read with the parent: neither list holds them."""
    found: list[tuple[Path, str]] = []
    unread: list[tuple[Path, str, str]] = []
    for path in paths:
        if not path.is_dir():
            found.append((path, path.name))
            continue
        for child in sorted(path.rglob("*")):
            if not child.is_file() or is_subagent_file(child):
                continue
            key = child.relative_to(path).as_posix()
            if child.name == MANIFEST:
                unread.append((child, key, "the set's manifest, not a recorded session"))
            elif not child.name.endswith(SESSION_SUFFIXES):
                kind = f"{child.suffix} files" if child.suffix else "files without a suffix"
                unread.append((child, key, f"no importer reads {kind}"))
            else:
                found.append((child, key))
    return found, unread


SESSION_SUFFIXES = (".jsonl", ".traj", ".json", ".aider.chat.history.md")
"""Names a recorded session file ends with (format detection then reads its content)."""
MANIFEST = "manifest.jsonl"


SPLITS = ("A", "B")
"""The two halves `--split` chooses between."""


def split_of(relative: str) -> str:
    """`A` or `B`: the parity of the first byte of the sha256 of a file's relative path
    (UTF-8), even → A. Stable across machines and checkouts, blind to the file's content."""
    digest = hashlib.sha256(relative.encode("utf-8")).digest()
    return SPLITS[digest[0] % 2]
