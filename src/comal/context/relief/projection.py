"""Stage 1 — projection: old, large results become exact references, when that pays.

Chosen, oldest first: results shown in full or as a preview that are not errors, are big
enough to matter (small results carry the most later-used facts per token and free little),
and are not among the most recent outputs. Projection stops once the estimate reaches the
target — well under the threshold, so the next pressure event is many turns away and the
prompt prefix stays stable for provider caches meanwhile.

A plan is *feasible* when it reaches the target. Whether it pays is decided by the engine with
the cost model of `pressure.py`: it counts the tokens the plan forces to be re-sent uncached
(every token after the first changed byte) against the room it frees, and compares that with a
derivation, which re-sends only the checkpoint and its tail. Pure: same inputs ⇒ same plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from comal.context.measure.budget import Budget
from comal.context.measure.tokens import TokenCounter
from comal.context.view.build import PART_OVERHEAD, Assembly, PartCost, ResultTexts
from comal.context.view.entry import whole_limit


@dataclass(frozen=True, slots=True)
class ProjectionPlan:
    """What a projection would do, and whether it is worth doing."""

    result_ids: tuple[str, ...]
    call_ids: tuple[str, ...]
    before_tokens: int
    after_tokens: int
    target_tokens: int
    resent_tokens: int
    accepted: bool
    """Feasible: it reaches the target (the engine still weighs it against a derivation)."""
    reason: str


def min_projectable_tokens(usable: int) -> int:
    """Smallest result worth projecting: ~2,000 tokens, less at very small windows."""
    return max(500, min(2_000, usable // 12))


def recent_tokens(usable: int) -> int:
    """The newest part of the conversation whose outputs are never projected (1/6 of usable:
    the same share an output may take and still enter whole, `view.entry.whole_limit`)."""
    return whole_limit(usable)


def _protected_from(asm: Assembly, recent: int) -> int:
    """Index of the first part inside the protected recent zone."""
    parts = asm.parts
    acc = 0
    index = len(parts)
    while index > 0 and acc + parts[index - 1].tokens <= recent:
        index -= 1
        acc += parts[index].tokens
    # The results of the newest assistant message are always protected.
    newest = max((p.seq for p in parts if p.role == "assistant"), default=None)
    if newest is None:
        return index
    first_newest = next(
        (i for i, p in enumerate(parts) if p.role == "result" and p.seq > newest), len(parts)
    )
    return min(index, first_newest)


def plan_projection(
    asm: Assembly,
    texts: ResultTexts,
    counter: TokenCounter,
    budget: Budget,
    estimate: int,
    goal: int | None = None,
    keep: frozenset[str] = frozenset(),
) -> ProjectionPlan:
    """Plan a projection of `asm` (whose calibrated size is `estimate`) down to the target.

    Args:
        asm: the current view.
        texts: result renderings.
        counter: token counter (the one `asm` was counted with).
        budget: the current budget.
        estimate: the current input estimate (anchored or calibrated).
        goal: keep projecting down to this size when it is below the target (the engine passes
            what a derivation would leave, so both candidates are priced at their deepest).
        keep: results never projected (the working set, `working_set.py`).

    Outputs that entered whole only because the window had room for them (over the byte
    ceiling, `view/entry.py`) go first, oldest first; then other large outputs, oldest first.
    """
    scale = estimate / max(asm.total_tokens, 1)
    target = budget.target
    floor = min_projectable_tokens(budget.usable)
    stop = _protected_from(asm, recent_tokens(budget.usable))
    chosen: list[PartCost] = []
    first_index: int | None = None
    freed = 0.0
    candidates: list[tuple[int, PartCost]] = []
    for index, part in enumerate(asm.parts[:stop]):
        item = part.result
        if item is None or part.kind not in ("full", "preview") or not item.projectable:
            continue
        if part.tokens < floor or item.entry.id in keep:
            continue
        candidates.append((index, part))
    ceiling = texts.large_output_bytes

    def order(candidate: tuple[int, PartCost]) -> tuple[bool, int]:
        index, part = candidate
        item = part.result
        entered_whole = item is not None and part.kind == "full" and item.facts.size_bytes > ceiling
        return (not entered_whole, index)

    for index, part in sorted(candidates, key=order):
        item = part.result
        assert item is not None
        ref_tokens = counter.count(texts.text(item, "ref")) + PART_OVERHEAD
        gain = part.tokens - ref_tokens
        if gain * 2 < part.tokens:
            continue
        chosen.append(part)
        first_index = index if first_index is None else min(first_index, index)
        freed += gain * scale
        if estimate - freed <= min(target, goal if goal is not None else target):
            break
    after = math.ceil(estimate - freed)
    resent = 0
    if first_index is not None:
        tail = sum(p.tokens for p in asm.parts[first_index:])
        resent = math.ceil(tail * scale - freed)
    result_ids = tuple(p.result.entry.id for p in chosen if p.result is not None)
    call_ids = tuple(p.result.call_id for p in chosen if p.result is not None)
    if not chosen:
        reason = "nothing old and large enough to project"
    elif after > target:
        reason = "projection cannot reach the target"
    else:
        reason = "pressure"
    return ProjectionPlan(
        result_ids,
        call_ids,
        estimate,
        after,
        target,
        resent,
        reason == "pressure",
        reason,
    )
