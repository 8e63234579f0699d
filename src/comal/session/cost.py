"""A session's cost in money, from the usage its provider measured and the models' prices.

Invariants:
- Each response is priced with the price of the model that produced it (`/model` may switch).
- A response whose input or output count was not reported is priced from Comal's own
  estimate of its request (input) and counted as estimated: the total is shown with `~`.
- A model with no price makes the total unknown (never 0); what could be priced is still
  given as `priced_usd`, and the models without a price are named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from comal.ledger.entry import Entry
from comal.ledger.records import AssistantMessage, Kind, ProviderRequest, ResponseDiscardedRecord
from comal.messages import JSONObject
from comal.usage import Price, Usage

MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class SessionCost:
    """The money a session's model calls cost."""

    priced_usd: float
    """The sum over the responses whose model has a price."""
    responses: int
    estimated: bool
    """Some counts came from Comal's estimate, not the provider's measurement."""
    unpriced_models: tuple[str, ...]
    prices: tuple[tuple[str, Price], ...]
    """(model, price) of each priced model, in first-use order."""

    @property
    def usd(self) -> float | None:
        """The total, or None when a model has no price."""
        return None if self.unpriced_models else self.priced_usd


def response_cost(usage: Usage, price: Price, estimated_input: int | None) -> tuple[float, bool]:
    """(dollars, estimated) of one response."""
    estimated = usage.new_input is None or usage.output is None
    new_input = usage.new_input if usage.new_input is not None else estimated_input or 0
    dollars = (
        new_input * price.input
        + (usage.cache_read or 0) * price.cached_input
        + (usage.cache_write or 0) * price.cache_write
        + (usage.output or 0) * price.output
    ) / MILLION
    return dollars, estimated


def session_cost(entries: Sequence[Entry], configured: Mapping[str, Price]) -> SessionCost:
    """The cost of every response in `entries` (discarded ones included: they were billed)."""
    # The price table is read when a cost is: listing sessions never loads the providers.
    from comal.providers.pricing import price_for

    estimates: dict[str, int] = {}
    total, count, estimated = 0.0, 0, False
    unpriced: dict[str, None] = {}
    prices: dict[str, Price] = {}
    last_model = ""
    for entry in entries:
        if entry.kind == Kind.PROVIDER_REQUEST:
            request = ProviderRequest.from_entry(entry)
            estimates[entry.id] = request.estimated_input_tokens or 0
            last_model = request.model
            continue
        reply: AssistantMessage | ResponseDiscardedRecord
        if entry.kind == Kind.MESSAGE_ASSISTANT:
            answered = AssistantMessage.from_entry(entry)
            reply, model = answered, answered.model or last_model
        elif entry.kind == Kind.RESPONSE_DISCARDED:
            reply = ResponseDiscardedRecord.from_entry(entry)
            model = last_model
        else:
            continue
        usage = Usage() if reply.usage is None else Usage.from_json(reply.usage)
        price = price_for(model, configured)
        count += 1
        if price is None:
            unpriced[model or "unknown model"] = None
            continue
        prices.setdefault(model, price)
        asked = None if reply.request_entry is None else estimates.get(reply.request_entry)
        dollars, guessed = response_cost(usage, price, asked)
        total += dollars
        estimated = estimated or guessed
    return SessionCost(total, count, estimated, tuple(unpriced), tuple(prices.items()))


def render_cost(cost: SessionCost) -> str:
    """One line: `cost $0.0123 (2 responses; prices of 2026-11-05)`, `~$…`, or unknown."""
    if cost.responses == 0:
        return "cost: no model call yet"
    dates = sorted({p.as_of for _, p in cost.prices})
    when = f"; prices of {', '.join(dates)}" if dates else ""
    mark = "~" if cost.estimated else ""
    if cost.usd is None:
        partial = f"; ${cost.priced_usd:.4f} for the priced models" if cost.prices else ""
        return (
            f"cost unknown: no price for {', '.join(cost.unpriced_models)}"
            f' (set [prices."{cost.unpriced_models[0]}"] in config.toml){partial}'
        )
    plural = "" if cost.responses == 1 else "s"
    return f"cost {mark}${cost.usd:.4f} ({cost.responses} response{plural}{when})"


def cost_json(cost: SessionCost) -> JSONObject:
    """The `cost` object of `comal state --json` and the JSON result."""
    return {
        "usd": None if cost.usd is None else round(cost.usd, 6),
        "priced_usd": round(cost.priced_usd, 6),
        "estimated": cost.estimated,
        "responses": cost.responses,
        "unpriced_models": list(cost.unpriced_models),
        "prices": {
            model: {
                "input": p.input,
                "cached_input": p.cached_input,
                "cache_write": p.cache_write,
                "output": p.output,
                "as_of": p.as_of,
                "source": p.source,
            }
            for model, p in cost.prices
        },
    }
