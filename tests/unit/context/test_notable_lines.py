"""Lines of note found in a few passes over the joined text equal the rule read line by line.

`notable_lines` ranks a hidden stretch by searching its joined text (a preview of a large log
must not run every pattern on every line); this reference reads the same rule of
`rendering._rank` one line at a time, and the two must choose the same lines over arbitrary
text, line breaks of every kind included.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from comal.context.view import rendering
from comal.context.view.rendering import ResultFacts, notable_lines, preview_text

PIECES = st.sampled_from(
    [
        "plain output line",
        "src/app/models.py:120: warning about something",
        "Traceback (most recent call last):",
        '  File "/srv/app/run.py", line 42, in main',
        "    handle(request)",
        "ValueError: bad header ✓",
        "KeyboardInterrupt",
        "async  def parse_header(raw):",
        "struct Header {",
        "FAILED tests/test_app.py::test_parse - AssertionError",
        "assertion failed: left == right",
        "panic: index out of range",
        "fatal: not a git repository",
        "x" * 300,
        "über ünïcödé 🚀",
        "a.b:1",
        "deflate",
        " ",
        "",
    ]
)
BREAKS = st.sampled_from(["\n", "\n", "\n", "\r\n", "\r", "\x0b", "\u2028", "\x85"])
LINES = st.lists(st.tuples(PIECES, BREAKS), max_size=120).map(
    lambda pairs: "".join(piece + brk for piece, brk in pairs).splitlines()
)


def _reference(lines: list[str], budget: int) -> list[tuple[int, str]]:
    """The rule one line at a time: rank each line, frames carry the line under them."""

    def rank(line: str) -> int | None:
        if rendering._EXCEPTION.match(line) or rendering._FRAME.match(line):
            return 0
        if rendering._SALIENT.search(line) and not rendering._PATH_LINE.search(line):
            return 1
        if rendering._DEFINITION.match(line):
            return 2
        if rendering._PATH_LINE.search(line):
            return 3
        return None

    ranked: list[tuple[int, int]] = []
    seen: set[str] = set()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped in seen:
            continue
        value = rank(line)
        if value is None and index and rendering._FRAME.match(lines[index - 1]):
            value = 0
        if value is not None:
            seen.add(stripped)
            ranked.append((value, index))
    chosen: list[int] = []
    used = 0
    for _, index in sorted(ranked):
        cost = len(rendering._clip(lines[index].rstrip())) + 8
        if used + cost > budget:
            continue
        chosen.append(index)
        used += cost
    return [(i, rendering._clip(lines[i].rstrip())) for i in sorted(chosen)]


@settings(max_examples=200, deadline=None)
@given(LINES, st.sampled_from([0, 9, 60, 256, 2_048]))
def test_notable_lines_follow_the_line_by_line_rule(lines: list[str], budget: int) -> None:
    assert notable_lines(lines, budget) == _reference(lines, budget)


@settings(max_examples=200, deadline=None)
@given(LINES, st.data())
def test_ranks_reused_for_any_cut_are_the_ranks_of_the_middle(
    lines: list[str], data: st.DataObject
) -> None:
    """A preview ranks the text before its tail once; any middle cut from it ranks the same."""
    rest = "\n".join(lines) + data.draw(st.sampled_from(["", "\n", "\r"]))
    whole = rest.splitlines()
    hot = rendering._hot_ranks(whole)
    cut = data.draw(st.integers(0, len(rest)))
    middle = rendering._whole_lines(rest[:cut], rest)
    assert rendering._middle_lines(rest[:cut], rest, whole) == middle
    reused = rendering._middle_ranks(middle, whole, hot)
    assert [reused(i) for i in range(len(middle))] == rendering._line_ranks(middle)
    assert rendering._line_ranks(middle) == [rendering._rank(line) for line in middle]


def test_a_preview_of_a_log_quotes_its_traceback() -> None:
    """The traceback deep in the hidden middle of a long log is among the lines of note."""
    lines = [f"src/pkg/mod.py:{i}: value = compute({i})" for i in range(3_000)]
    lines[1_500:1_500] = [
        "Traceback (most recent call last):",
        '  File "/srv/app/run.py", line 42, in main',
        "    handle(request)",
        "ValueError: bad header",
    ]
    text = "\n".join(lines) + "\n"
    facts = ResultFacts("evt_" + "0" * 32, "Bash", len(text), 0, "ok", "sha256:" + "0" * 64)
    preview = preview_text(facts, text.encode(), 16_384)
    notes = preview.split("[lines of note in the part not shown, by line number:]\n", 1)[1]
    assert '1502|   File "/srv/app/run.py", line 42, in main' in notes
    assert "1503|     handle(request)" in notes
    assert "1504| ValueError: bad header" in notes


_UNANCHORED_PATH_LINE = re.compile(r"[\w./\\-]+\.\w{1,8}:\d+")
"""The `path.ext:123` pattern before its look-behind: the same lines match, in quadratic time."""


@given(st.text(alphabet="ab./-_:1\\ \t.xyz9", max_size=80))
def test_the_anchored_path_pattern_finds_the_same_lines_at_the_same_place(line: str) -> None:
    before, now = _UNANCHORED_PATH_LINE.search(line), rendering._PATH_LINE.search(line)
    assert (before is None) == (now is None)
    if before is not None and now is not None:
        assert before.span() == now.span()


def test_one_very_long_line_is_ranked_like_a_short_one() -> None:
    # 200 kB on one line, with a trigger word: ranked (and previewed) like any error line.
    long = "error " + "x" * 200_000
    assert rendering._rank(long) == rendering._rank("error " + "x" * 10) == 1
    assert rendering._rank("x" * 200_000 + " a/b.py:12") == 3
