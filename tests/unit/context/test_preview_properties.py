"""Large-output previews over arbitrary text (hypothesis): every piece shown is exact.

The head is the text's own beginning, the tail its own end, the elision note's offset is where
the hidden part starts (in UTF-16 units, as EvidenceRead pages), and each line of note is the
source line of the number printed beside it. Same input, same bytes.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from comal.context.view.rendering import ResultFacts, evidence_text, preview_text
from comal.session import utf16_len

LINES = st.sampled_from(
    [
        "plain output line",
        "src/app/models.py:120: warning about something",
        "Traceback (most recent call last):",
        '  File "/srv/app/run.py", line 42, in main',
        "    handle(request)",
        "ValueError: bad header ✓",
        "def parse_header(raw):",
        "FAILED tests/test_app.py::test_parse - AssertionError",
        "x" * 300,
        "über ünïcödé 🚀 line",
        "",
    ]
)
TEXTS = st.lists(LINES, min_size=50, max_size=900).map(lambda lines: "\n".join(lines) + "\n")
FACTS = ResultFacts("evt_" + "0" * 32, "Bash", 0, 0, "ok", "sha256:" + "0" * 64)


def _sections(preview: str) -> tuple[str, str | None, list[str], str]:
    body = preview.split("\n", 1)[1]
    if "\n[… " not in body:
        return body, None, [], ""
    head, rest = body.split("\n[… ", 1)
    note, rest = rest.split("\n", 1) if "\n" in rest else (rest, "")
    marks: list[str] = []
    if rest.startswith("[lines of note in the part not shown, by line number:]\n"):
        block, rest = rest.split("\n[end of lines of note]", 1)
        marks = block.split("\n")[1:]
        rest = rest.removeprefix("\n")
    return head, note, marks, rest


# A head that ends on a blank line: the preview drops the head's trailing newlines, the offset
# does not.
BLANK_AT_CUT = (
    "\n".join(
        ["plain output line"] * 33
        + ["FAILED tests/test_app.py::test_parse - AssertionError"]
        + ["x" * 300] * 8
        + [""]
        + ["plain output line"] * 41
        + ["x" * 300]
    )
    + "\n"
)

# A traceback frame whose code line is cut by the tail: the piece before the cut is not quoted
# as the whole line (found by hypothesis, pinned as an example).
FRAGMENT_AT_CUT = (
    "plain output line\n" * 25
    + "src/app/models.py:120: warning about something\n" * 16
    + "x" * 313
    + '\n  File "/srv/app/run.py", line 42, in main\n'
    + "x" * 313
    + "\n"
    + "plain output line\n" * 4
    + "src/app/models.py:120: warning about something\n" * 3
)


@settings(max_examples=60, deadline=None)
@given(TEXTS, st.sampled_from([2_048, 4_096, 16_384]))
@example(BLANK_AT_CUT, 4_096)
@example(FRAGMENT_AT_CUT, 2_048)
def test_every_piece_of_a_preview_is_exact(text: str, chars: int) -> None:
    body = text.encode()
    preview = preview_text(FACTS, body, chars)
    assert preview == preview_text(FACTS, body, chars)
    head, note, marks, tail = _sections(preview)
    source = evidence_text(body)
    if note is None:
        assert head.rstrip("\n") == source.rstrip("\n")
        return
    assert source.startswith(head)
    offset = int(note.split('{"offset":', 1)[1].split(",", 1)[0])
    # The hidden part starts right after the head (the preview drops its trailing newlines).
    end = len(head)
    while source[end : end + 1] == "\n" and utf16_len(source[:end]) < offset:
        end += 1
    assert utf16_len(source[:end]) == offset
    assert source.rstrip("\n").endswith(tail.rstrip("\n"))
    lines = source.splitlines()
    for mark in marks:
        number, shown = mark.split("| ", 1)
        original = lines[int(number) - 1]
        assert shown == original or (shown.endswith("…") and original.startswith(shown[:-1]))
    # The preview stays near its size whatever the lines of note take.
    assert len(preview) <= chars + 1_200
