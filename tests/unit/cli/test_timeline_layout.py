"""The context timeline's layout: mark labels in rows that never overlap, inside the axes, the
legend apart from them, and the threshold line where it is given."""

from __future__ import annotations

from typing import Any

from comal.cli.timeline import CallTokens, ContextMark, Timeline, label_rows, timeline_figure


def test_labels_take_the_first_row_where_they_fit() -> None:
    assert label_rows([0.0, 1.0, 2.5, 3.0, 6.0], [2.0, 2.0, 2.0, 2.0, 1.0]) == [0, 1, 0, 1, 0]
    assert label_rows([], []) == []


def crowded() -> Timeline:
    calls = tuple(CallTokens(i, i, 1_000 * i, 0, 2_000, 300, False) for i in range(60))
    marks = tuple(
        ContextMark(index, kind, f"{kind} #{n} −{12_345 + n:,}", 12_345)
        for n, (index, kind) in enumerate(
            [(3, "projection"), (4, "checkpoint"), (5, "projection"), (6, "summary")]
            + [(20 + k, "checkpoint") for k in range(6)]
            + [(59, "projection")]
        )
    )
    return Timeline(calls, marks, 64_000, 51_904)


def _overlap(a: Any, b: Any) -> bool:
    return bool(a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1)


def test_crowded_marks_neither_overlap_each_other_nor_the_legend_and_stay_inside() -> None:
    import matplotlib.pyplot as plt

    fig: Any = timeline_figure(crowded(), "session · model")
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        (ax,) = fig.axes
        labels = [t.get_window_extent(renderer) for t in ax.texts]
        legend = ax.get_legend().get_window_extent(renderer)
        frame = ax.get_window_extent(renderer)
        threshold = [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"]
    finally:
        plt.close(fig)
    assert len(labels) == 11
    clashes = [
        (i, j) for i in range(len(labels)) for j in range(i) if _overlap(labels[i], labels[j])
    ]
    assert clashes == []
    assert [i for i, box in enumerate(labels) if _overlap(box, legend)] == []
    outside = [
        i
        for i, box in enumerate(labels)
        if box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1 or box.y1 > frame.y1 + 1
    ]
    assert outside == []
    assert threshold == [51_904]
