"""What a session ran on: its model, window, vision and output reserve, read from its entries.

- The latest of `session.started` and `session.resumed` decides: a session resumed on another
  model is reported against the window of the model it now runs on.
- A window never recorded (an imported session) is its model's catalog window, else the
  configuration's fallback; vision likewise is recorded, else the catalog's word.
- The output reserve is the one its latest request was sent with: a run may have fixed it with
  `--max-output-tokens`, and a report of the recorded session shows the budget it really used.
- `kept_model`: a `/model` choice is kept when the session is resumed with the same provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from comal.config import DEFAULT_WINDOW_TOKENS
from comal.ledger.records import (
    Kind,
    ProviderRequest,
    RecordedWindow,
    SessionConfigured,
    SessionResumed,
    SessionStarted,
    record_of,
)
from comal.ledger.store import Ledger

if TYPE_CHECKING:
    from comal.providers.catalog import CatalogEntry


@dataclass(frozen=True, slots=True)
class RanOn:
    """The model and window a recorded session last ran on."""

    model: str
    window_tokens: int
    window_source: str
    """`recorded`, or the source recorded with it; `catalog` or `fallback` when none was."""
    vision: bool
    output_reserve: int | None
    """The reserve its latest request was sent with; None: no request yet."""


def _window(window: RecordedWindow | None, known: CatalogEntry | None) -> tuple[int, str]:
    """The window a session ran with; an imported one (none recorded) gets its model's."""
    tokens = None if window is None else window.tokens
    if window is not None and tokens is not None and tokens > 0:
        return tokens, "recorded" if window.source is None else window.source
    if known is not None:
        return known.window, "catalog"
    return DEFAULT_WINDOW_TOKENS, "fallback"


def _vision(vision: bool | None, known: CatalogEntry | None) -> bool:
    """Whether the session's model took images (recorded; else its catalog entry's word)."""
    if vision is not None:
        return vision
    return known is not None and known.vision


def _last_reserve(ledger: Ledger, session_id: str) -> int | None:
    """The output reserve the session's latest request was sent with, if any."""
    requests = ledger.entries(session_id, kinds=(Kind.PROVIDER_REQUEST,))
    if not requests:
        return None
    value = ProviderRequest.from_entry(requests[-1]).output_reserve
    return value if value is not None and value > 0 else None


def ran_on(ledger: Ledger, session_id: str) -> RanOn:
    """What `session_id` last ran on (see module docstring).

    Raises:
        UnknownSessionError: no such session.
    """
    # The catalog is read when a recorded session is: listing sessions never loads the providers.
    from comal.providers import catalog

    info = ledger.session(session_id)
    started = ledger.entries(session_id, kinds=(Kind.SESSION_STARTED, Kind.SESSION_RESUMED))
    latest = started[-1] if started else None
    ran: SessionStarted | SessionResumed | None = None
    if latest is not None:
        ran = (
            SessionStarted if latest.kind == Kind.SESSION_STARTED else SessionResumed
        ).from_entry(latest)
    model = (ran.model if ran is not None else "") or info.model
    known = catalog.lookup(model) if model else None
    window, source = _window(None if ran is None else ran.window, known)
    vision = _vision(ran.vision if isinstance(ran, SessionStarted) else None, known)
    return RanOn(model, window, source, vision, _last_reserve(ledger, session_id))


def kept_model(ledger: Ledger, session_id: str, provider_name: str) -> str | None:
    """The model the session last ran on with this provider (a `/model` choice is kept when it
    is resumed), or None when it last ran on another provider or records none."""
    entries = ledger.entries(session_id, kinds=(Kind.SESSION_CONFIGURED, Kind.SESSION_RESUMED))
    for entry in reversed(entries):
        ran = record_of(entry)
        if isinstance(ran, SessionConfigured | SessionResumed):
            return (ran.model or None) if ran.provider == provider_name else None
    return None
