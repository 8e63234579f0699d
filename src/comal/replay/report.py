"""Replay results as JSON, a Markdown table and a PNG plot.

JSON: `{"split": …, "rows": [...], "aggregate": [...], "aggregate_by_source": [...],
"oracle_gap": [...]}` (the half of the files replayed, `A`/`B` or null; Comal's gap to the
oracle per window, `oracle_gap`; rows per session,
policy and window; aggregates per policy and window, and per source, policy and window). The
Markdown table shows the aggregates, then one verdict line per window (`verdict_lines`). The plot
puts cost (ratio to raw) against the share of later-used facts in view, one point per policy
and window.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from comal.errors import missing_extra
from comal.messages import JSONObject, JSONValue
from comal.replay.metrics import aggregate_by_source

SUBJECT = "comal"
"""The policy the verdict judges against the peers."""
ORACLE = "oracle"
"""Comal's schedule with hindsight: no peer, the limit Comal's gap is measured to."""

_COLUMNS = (
    ("policy", "policy"),
    ("window", "window"),
    ("calls", "calls"),
    ("ratio_raw", "cost/raw"),
    ("ratio_raw_anthropic", "cost/raw (Anthropic)"),
    ("ratio_physical", "cost/physical"),
    ("cost_vs_own_ideal", "cost/own ideal"),
    ("overflows", "overflows"),
    ("peak_tokens", "peak"),
    ("mean_tokens", "mean"),
    ("cache_hit_share", "cache hits"),
    ("facts_in_view", "facts in view"),
    ("facts_reachable", "facts reachable"),
    ("facts_reachable_via_index", "reachable via index"),
    ("summary_tokens", "summary tokens"),
    ("projections", "projections"),
    ("derivations", "derivations"),
    ("cut_replies", "cut replies"),
    ("events", "events"),
    ("event_regret", "event regret"),
    ("prefix_match_share", "prefix matched"),
    ("decision_ms_p50", "decision p50 ms"),
    ("decision_ms_p99", "decision p99 ms"),
)
_PERCENT = {
    "cache_hit_share",
    "facts_in_view",
    "facts_reachable",
    "facts_reachable_via_index",
    "prefix_match_share",
}


def result_json(
    rows: Sequence[JSONObject], aggregate: Sequence[JSONObject], *, split: str | None = None
) -> JSONObject:
    """The JSON document (per-call timings are left out of the rows; `split`: the half of the
    files replayed, `A`/`B`, or None for all of them)."""
    slim: list[JSONValue] = [{k: v for k, v in r.items() if k != "decision_ms"} for r in rows]
    # `event_list` stays: each event's call, trigger, sizes, regret and lost facts.
    by_source: list[JSONValue] = list(aggregate_by_source(rows))
    gap: list[JSONValue] = list(oracle_gap(aggregate))
    return {
        "split": split,
        "rows": slim,
        "aggregate": list(aggregate),
        "aggregate_by_source": by_source,
        "oracle_gap": gap,
    }


def write_json(
    path: Path,
    rows: Sequence[JSONObject],
    aggregate: Sequence[JSONObject],
    *,
    split: str | None = None,
) -> None:
    """Write the JSON document."""
    document = result_json(rows, aggregate, split=split)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def split_line(split: str | None, files: int, found: int) -> str:
    """The report's first line when only one half of the files was replayed ("" otherwise)."""
    if split is None:
        return ""
    return (
        f"Split {split}: {files:,} of the {found:,} session files found (sha256 of each file's"
        " path relative to the PATH it was found under: first byte even → A, odd → B).\n\n"
    )


def _cell(key: str, value: JSONValue) -> str:
    if value is None:
        return "–"
    if key == "window" and isinstance(value, int):
        return f"{value // 1000}k" if value % 1000 == 0 else str(value)
    if key in _PERCENT and isinstance(value, int | float):
        return f"{100 * value:.1f} %"
    if isinstance(value, float):
        return f"{value:.3f}" if key.startswith("ratio") or "ideal" in key else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown_table(aggregate: Sequence[JSONObject]) -> str:
    """The aggregates as a Markdown table, grouped by window."""
    ordered = sorted(aggregate, key=lambda a: (_window(a), 0))
    head = "| " + " | ".join(title for _, title in _COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in _COLUMNS) + "|"
    lines = [head, rule]
    for item in ordered:
        lines.append("| " + " | ".join(_cell(k, item.get(k)) for k, _ in _COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def verdict(aggregate: Sequence[JSONObject], window: int) -> tuple[bool, list[str]] | None:
    """Whether Comal is ahead at `window` of every overflow-free peer, and the margins.

    Ahead means `cost_weighted` ≤ and `facts_in_view` ≥ the peer's. Margins are Comal's cost
    relative to the peer's (negative: cheaper) and its facts in view less the peer's, in points.
    None when Comal was not replayed at that window.
    """
    here = [a for a in aggregate if _window(a) == window]
    subject = next((a for a in here if a.get("policy") == SUBJECT), None)
    if subject is None:
        return None
    ahead = True
    margins: list[str] = []
    for peer in here:
        if peer is subject or peer.get("policy") == ORACLE or _float(peer, "overflows") > 0:
            continue
        cost, peer_cost = _float(subject, "cost_weighted"), _float(peer, "cost_weighted")
        view, peer_view = _float(subject, "facts_in_view"), _float(peer, "facts_in_view")
        ahead = ahead and cost <= peer_cost and view >= peer_view
        relative = 100 * (cost / peer_cost - 1) if peer_cost else 0.0
        points = 100 * (view - peer_view)
        margins.append(f"{peer['policy']} cost {relative:+.1f} %, facts in view {points:+.1f} pt")
    return ahead, margins


def oracle_gap(aggregate: Sequence[JSONObject]) -> list[JSONObject]:
    """Per window where both ran: Comal's facts in view less the oracle's (points) and its
    cost relative to the oracle's (percent; positive: dearer)."""
    by_key = {(str(a.get("policy")), _window(a)): a for a in aggregate}
    out: list[JSONObject] = []
    for window in sorted({_window(a) for a in aggregate}):
        subject, oracle = by_key.get((SUBJECT, window)), by_key.get((ORACLE, window))
        if subject is None or oracle is None:
            continue
        cost, limit = _float(subject, "cost_weighted"), _float(oracle, "cost_weighted")
        out.append(
            {
                "window": window,
                "facts_in_view_points": round(
                    100 * (_float(subject, "facts_in_view") - _float(oracle, "facts_in_view")), 2
                ),
                "cost_percent": round(100 * (cost / limit - 1), 2) if limit else 0.0,
            }
        )
    return out


def verdict_lines(aggregate: Sequence[JSONObject]) -> str:
    """One line per window: is Comal ahead of every overflow-free peer, with the margins."""
    lines = []
    for window in sorted({_window(a) for a in aggregate}):
        judged = verdict(aggregate, window)
        if judged is None:
            continue
        ahead, margins = judged
        label = _cell("window", window)
        against = "; ".join(margins) if margins else "no peer ran without overflows"
        gap = next((g for g in oracle_gap(aggregate) if g["window"] == window), None)
        headroom = (
            f"; gap to the oracle: facts in view {_float(gap, 'facts_in_view_points'):+.1f} pt,"
            f" cost {_float(gap, 'cost_percent'):+.1f} %"
            if gap is not None
            else ""
        )
        lines.append(
            f"- {label}: ahead of every overflow-free peer on cost_weighted (≤) and "
            f"facts_in_view (≥): **{'yes' if ahead else 'no'}** ({against}){headroom}"
        )
    return "\n".join(lines) + ("\n" if lines else "")


def source_table(by_source: Sequence[JSONObject]) -> str:
    """One row per (window, source): each policy's cost/raw, facts in view and overflows.

    The set's totals can hide a source where Comal trails: this is where it shows."""
    if not by_source:
        return ""
    policies = list(dict.fromkeys(str(a["policy"]) for a in by_source))
    keys = sorted({(_window(a), str(a["source"])) for a in by_source})
    cells = {(_window(a), str(a["source"]), str(a["policy"])): a for a in by_source}
    head = "| window | source | sessions | " + " | ".join(policies) + " |"
    lines = [head, "|" + "|".join("---" for _ in range(3 + len(policies))) + "|"]
    for window, source in keys:
        row = [_cell("window", window), source]
        first = next(cells[(window, source, p)] for p in policies if (window, source, p) in cells)
        row.append(_cell("sessions", first.get("sessions")))
        for policy in policies:
            item = cells.get((window, source, policy))
            if item is None:
                row.append("–")
                continue
            overflows = int(_float(item, "overflows"))
            in_view = _cell("facts_in_view", item.get("facts_in_view"))
            row.append(
                f"{_float(item, 'ratio_raw'):.3f} · {in_view}"
                + (f" · {overflows:,} overflow{'s' if overflows > 1 else ''}" if overflows else "")
            )
        lines.append("| " + " | ".join(row) + " |")
    title = "By source (cost/raw · facts in view · overflows, if any):"
    return "\n".join([title, "", *lines]) + "\n"


def markdown_report(aggregate: Sequence[JSONObject], by_source: Sequence[JSONObject] = ()) -> str:
    """The Markdown table, the per-window verdict lines, then the per-source table."""
    lines = verdict_lines(aggregate)
    sources = source_table(by_source)
    return (
        markdown_table(aggregate)
        + _cold_line(aggregate)
        + ("\n" + lines if lines else "")
        + ("\n" + sources if sources else "")
    )


def _cold_line(aggregate: Sequence[JSONObject]) -> str:
    """How many calls came after a recorded gap longer than the cache's time-to-live (the
    same calls for every policy: a property of the recordings, counted on the first row)."""
    if not aggregate:
        return ""
    first = aggregate[0]
    cold, calls = int(_float(first, "cold_calls")), int(_float(first, "calls"))
    return (
        f"\nCalls sent after the recording was idle longer than the prompt cache's time-to-live,"
        f" billed uncached for every policy: {cold:,} of {calls:,}.\n"
    )


def explain_lines(rows: Sequence[JSONObject], session: str, top: int = 10) -> str:
    """The worst events (most regret first) of the sessions whose name holds `session`, for
    every policy and window replayed, after one summary line per (policy, window)."""
    chosen = [r for r in rows if session in str(r.get("session", ""))]
    if not chosen:
        return f"No replayed session is named like {session!r}.\n"
    lines = [
        f"Events of {', '.join(sorted({str(r['session']) for r in chosen}))} "
        "(regret: facts an event took out of view that the next 10 calls use):",
        "",
    ]
    found: list[tuple[int, str, JSONObject]] = []
    several = len({str(r["session"]) for r in chosen}) > 1
    for r in chosen:
        label = f"{r['policy']} · {_cell('window', r.get('window'))}"
        if several:
            label = f"{r['session']} · {label}"
        events = r.get("event_list")
        listed = [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []
        lines.append(
            f"- {label}: {len(listed):,} event{'' if len(listed) == 1 else 's'}, "
            f"regret {int(_float(r, 'event_regret')):,}"
        )
        found.extend((int(_float(e, "regret")), label, e) for e in listed)
    worst = sorted(
        (f for f in found if f[0] > 0), key=lambda f: (-f[0], f[1], _float(f[2], "call"))
    )
    lines += ["", f"Worst events ({min(top, len(worst))} of {len(worst)} with regret):"]
    for regret, label, event in worst[:top]:
        lost = event.get("lost")
        named = [str(x) for x in lost] if isinstance(lost, list) else []
        more = regret - len(named)
        lines.append(
            f"- {label} · call {int(_float(event, 'call'))} · {event.get('trigger')} · "
            f"{int(_float(event, 'before')):,} → {int(_float(event, 'landing')):,} tokens · "
            f"regret {regret}: {', '.join(named)}" + (f" (+{more} more)" if more > 0 else "")
        )
    return "\n".join(lines) + "\n"


def _window(item: JSONObject) -> int:
    value = item.get("window")
    return value if isinstance(value, int) else 0


def _float(item: JSONObject, key: str) -> float:
    value = item.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def write_png(path: Path, aggregate: Sequence[JSONObject]) -> None:
    """Cost (ratio to raw) against facts in view, per policy and window."""
    try:
        import matplotlib
    except ModuleNotFoundError:  # the `bench` extra: a core install says so in one line
        raise missing_extra("matplotlib", "bench", "comal bench replay --png") from None

    matplotlib.use("Agg")
    from matplotlib import pyplot

    windows = sorted({_window(a) for a in aggregate})
    policies = list(dict.fromkeys(str(a["policy"]) for a in aggregate))
    markers = "osD^v<>P*X"
    figure, axes = pyplot.subplots(1, len(windows), figsize=(5 * len(windows), 4.5), squeeze=False)
    for column, window in enumerate(windows):
        ax = axes[0][column]
        for number, policy in enumerate(policies):
            for item in aggregate:
                if item["policy"] != policy or _window(item) != window:
                    continue
                x, y = 100 * _float(item, "facts_in_view"), _float(item, "ratio_raw")
                overflowed = _float(item, "overflows") > 0
                ax.scatter(
                    x,
                    y,
                    marker=markers[number % len(markers)],
                    s=60,
                    facecolors="none" if overflowed else None,
                    edgecolors=f"C{number}",
                    color=f"C{number}",
                    label=policy + (" (overflows)" if overflowed else ""),
                )
        ax.set_title(f"window {window // 1000}k")
        ax.set_xlabel("later-used facts in view (%)")
        ax.set_ylabel("cost / raw (input-token units)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
