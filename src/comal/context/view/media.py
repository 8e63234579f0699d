"""The media reserve: images in active memory have a token budget of their own.

A vision model sees an image's pixels while it fits the media reserve (newest first); past
the reserve, and first of all under pressure, older images become references: the result's
text stays, with a sentence saying the pixels are no longer in view (and EvidenceRead's
`media` field describes them). A model without vision never gets pixels: its view holds the
reference and the sentence that it has not seen them. These decisions are `projection`
entries with `media_result_ids` (reason `media_reserve` or `media_pressure`), so the view
stays a pure function of the ledger and the prompt only changes at such an event.

Defaults: the reserve is a tenth of the window, never less than two images
(`[context] media_budget_tokens` sets it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.view.build import IMAGE_TOKENS, Assembly, ViewState
from comal.ledger.records import ProjectionRecord
from comal.ledger.store import Ledger

RESERVE_SHARE = 10
"""The default reserve is 1/RESERVE_SHARE of the window."""


def media_budget(window: int, configured: int | None) -> int:
    """The media reserve in tokens for `window` (configured, or the default)."""
    if configured is not None:
        return max(configured, 0)
    return max(window // RESERVE_SHARE, 2 * IMAGE_TOKENS)


@dataclass(frozen=True, slots=True)
class MediaInView:
    """One result whose images are in view, and what they cost."""

    result_id: str
    seq: int
    tokens: int


def media_in_view(asm: Assembly) -> list[MediaInView]:
    """Results whose images are shown as pixels in `asm`, oldest first."""
    found: dict[str, MediaInView] = {}
    for part in asm.parts:
        if part.kind == "media" and part.result is not None:
            rid = part.result.entry.id
            old = found.get(rid)
            tokens = part.tokens + (old.tokens if old else 0)
            found[rid] = MediaInView(rid, part.seq, tokens)
    return sorted(found.values(), key=lambda m: m.seq)


def plan_media(asm: Assembly, budget_tokens: int) -> list[str]:
    """Oldest results to show by reference so the images left fit `budget_tokens`."""
    shown = media_in_view(asm)
    total = sum(m.tokens for m in shown)
    out: list[str] = []
    for item in shown:
        if total <= budget_tokens:
            break
        out.append(item.result_id)
        total -= item.tokens
    return out


def plan_media_pressure(asm: Assembly) -> list[str]:
    """Under pressure: every result with images in view except the newest one."""
    return [m.result_id for m in media_in_view(asm)[:-1]]


def with_media(state: ViewState, ids: Sequence[str]) -> ViewState:
    """`state` with the images of `ids` shown by reference."""
    return ViewState(state.projected, state.checkpoint, state.media_projected | frozenset(ids))


def append_media_projection(
    ledger: Ledger, session_id: str, ids: Sequence[str], reason: str, before: int, after: int
) -> None:
    """Record that the images of `ids` are shown by reference from now on."""
    record = ProjectionRecord((), (), reason, before, after, media_result_ids=tuple(ids))
    ledger.append_record(session_id, record)
