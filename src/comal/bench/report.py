"""Replay results as JSON, a Markdown table and a PNG plot.

JSON: `{"rows": [...], "aggregate": [...]}` (rows per session, policy and window; aggregates per
policy and window). The Markdown table shows the aggregates. The plot puts cost (ratio to raw)
against the share of later-used facts in view, one point per policy and window.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from comal.messages import JSONObject, JSONValue

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
    ("summary_tokens", "summary tokens"),
    ("projections", "projections"),
    ("derivations", "derivations"),
    ("prefix_match_share", "prefix matched"),
    ("decision_ms_p50", "decision p50 ms"),
    ("decision_ms_p99", "decision p99 ms"),
)
_PERCENT = {"cache_hit_share", "facts_in_view", "facts_reachable", "prefix_match_share"}


def result_json(rows: Sequence[JSONObject], aggregate: Sequence[JSONObject]) -> JSONObject:
    """The JSON document (per-call timings are left out of the rows)."""
    slim: list[JSONValue] = [{k: v for k, v in r.items() if k != "decision_ms"} for r in rows]
    return {"rows": slim, "aggregate": list(aggregate)}


def write_json(path: Path, rows: Sequence[JSONObject], aggregate: Sequence[JSONObject]) -> None:
    """Write the JSON document."""
    path.write_text(json.dumps(result_json(rows, aggregate), indent=1) + "\n", encoding="utf-8")


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


def _window(item: JSONObject) -> int:
    value = item.get("window")
    return value if isinstance(value, int) else 0


def _float(item: JSONObject, key: str) -> float:
    value = item.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def write_png(path: Path, aggregate: Sequence[JSONObject]) -> None:
    """Cost (ratio to raw) against facts in view, per policy and window."""
    import matplotlib

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
