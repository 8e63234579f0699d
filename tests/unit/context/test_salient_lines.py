"""Salient lines read from both ends equal the rule read line by line.

`salient_lines` keeps the first few and the last few salient lines of a reference; it searches
only those ends (a 3,000-line log is not matched line by line to keep eight of its lines). This
reference reads every line in order, and the two must keep the same lines over arbitrary text:
repeats, skipped lines, copies of a line that match only past the 4,096-character scan window.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from comal.context.view import rendering
from comal.context.view.rendering import salient_lines

PIECES = st.sampled_from(
    [
        "plain output line",
        "src/app/models.py:120: warning about something",
        "src/app/models.py:121: warning about something",
        "Traceback (most recent call last):",
        '  File "/srv/app/run.py", line 42, in main',
        "ValueError: bad header",
        "FAILED tests/test_app.py::test_parse - AssertionError",
        "assertion failed: left == right",
        "  assertion failed: left == right",
        "error",
        # The same text stripped; only the unindented copy matches inside the scan window.
        "x" * 4_090 + " error",
        "   " + "x" * 4_090 + " error",
        "",
        " ",
    ]
)


def _reference(lines: list[str], skip: set[int]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if number - 1 in skip:
            continue
        stripped = line.strip()
        if not stripped or stripped in seen:
            continue
        if not rendering._SALIENT.search(line, 0, rendering._SCAN_CHARS):
            continue
        seen.add(stripped)
        found.append((number, rendering._clip(line.rstrip())))
    if len(found) > 8:
        found = found[:3] + found[-5:]
    return found


@settings(max_examples=400, deadline=None)
@given(
    st.lists(PIECES, max_size=60),
    st.sets(st.integers(min_value=0, max_value=70), max_size=8),
)
def test_salient_lines_equal_the_rule_read_line_by_line(lines: list[str], skip: set[int]) -> None:
    assert salient_lines(lines, skip) == _reference(lines, skip)


def test_a_long_log_keeps_its_first_three_and_last_five_salient_lines() -> None:
    lines = [f"src/pkg/mod.py:{i}: value = compute({i})" for i in range(3_000)]
    kept = salient_lines(lines, {0, 1, 2, 2_997, 2_998, 2_999})
    assert [number for number, _ in kept] == [4, 5, 6, 2_993, 2_994, 2_995, 2_996, 2_997]


def test_a_repeat_counts_where_its_text_first_matched() -> None:
    lines = ["error one", "plain", "error one", "error two"]
    assert salient_lines(lines, set()) == [(1, "error one"), (4, "error two")]
    # Skipped where it first appears, the text counts at its next occurrence.
    assert salient_lines(lines, {0}) == [(3, "error one"), (4, "error two")]
