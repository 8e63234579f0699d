"""The session layer: what a recorded session is, read purely from its ledger entries.

It sits between `ledger/` (the book) and the readers above it (`context/`, `evidence/`,
`agent/`, `importers/`, `replay/`, the front ends), which read a session only through the names
this front door exports (`tests/unit/test_layering.py` holds them to it):

- `pairing`: which call each result answers, the one rule every reader pairs by; it keeps the
  process-wide cache of parsed assistant messages (`assistant_message`);
- `status`: the session's status derived from its lifecycle entries, and the row that indexes it;
- `facts`: the calls still open, the uncertain results, the answers, the usage;
- `cost`: the money its model calls cost;
- `ran_on`: the model, window and output reserve it last ran on;
- `paged`, `units`: a recorded output read by pages, in UTF-16 units, exactly; it keeps the
  process-wide cache of page indexes (by blob digest, valid in any ledger).

It may read the ledger and, when a cost or a recorded window is asked for, the providers' tables
(prices, the model catalog); importing it loads no provider module, so listing sessions stays light.
"""

from comal.session.cost import SessionCost, cost_json, render_cost, session_cost
from comal.session.facts import (
    OpenCall,
    UncertainCall,
    UsageTotals,
    final_answer,
    last_answer,
    open_calls,
    uncertain_calls,
    usage_totals,
)
from comal.session.paged import (
    MAX_NEEDLE_UNITS,
    MIN_BYTES,
    PagedText,
    pageable,
    paged_text,
    snippet_of,
)
from comal.session.pairing import (
    PAIRING_KINDS,
    CallSite,
    Pairing,
    assistant_message,
    call_occurrence,
    pair,
    tool_calls,
)
from comal.session.ran_on import RanOn, kept_model, ran_on
from comal.session.status import (
    FINISHED,
    RECEIPT_KIND,
    SHOWN_STATUSES,
    Lifecycle,
    derive,
    index_running,
    index_status,
    lifecycle,
    reindex,
    session_status,
    shown_status,
    shows_as,
    with_shown_status,
    with_status,
)
from comal.session.units import Utf16Text, utf16_len

__all__ = [
    "FINISHED",
    "MAX_NEEDLE_UNITS",
    "MIN_BYTES",
    "PAIRING_KINDS",
    "RECEIPT_KIND",
    "SHOWN_STATUSES",
    "CallSite",
    "Lifecycle",
    "OpenCall",
    "PagedText",
    "Pairing",
    "RanOn",
    "SessionCost",
    "UncertainCall",
    "UsageTotals",
    "Utf16Text",
    "assistant_message",
    "call_occurrence",
    "cost_json",
    "derive",
    "final_answer",
    "index_running",
    "index_status",
    "kept_model",
    "last_answer",
    "lifecycle",
    "open_calls",
    "pageable",
    "paged_text",
    "pair",
    "ran_on",
    "reindex",
    "render_cost",
    "session_cost",
    "session_status",
    "shown_status",
    "shows_as",
    "snippet_of",
    "tool_calls",
    "uncertain_calls",
    "usage_totals",
    "utf16_len",
    "with_shown_status",
    "with_status",
]
