"""How a tool result reads in active memory: in full, as a large-output preview, or as a reference.

One rule, used everywhere: the text of a result is `render_output_text(body)` (or `(no output)`),
followed by `[exit code: N]` when a command exited non-zero and `[status: S]` when the receipt's
status is neither `ok` nor `error` (denied, uncertain, postcondition_observed).

A reference starts with a header the model learns to recognise,
`[ref evt_… · Bash · 14,882 bytes · exit 1 · sha256:0123456789ab]`, keeps a little of the text
(head, tail and *salient* lines: paths with line numbers, error/exception/FAILED lines, test
ids — what agents look for later) and ends with the exact `EvidenceRead` call that returns the
full text. Offsets in those calls are UTF-16 code units of the evidence text (the body decoded
as UTF-8 with U+FFFD replacements), the unit `EvidenceRead` pages in.

Everything here is a pure function of its arguments.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate, compress, repeat
from operator import eq, is_not
from typing import cast

from comal.context.units import utf16_len
from comal.messages import canonical_json, render_output_text

PLAIN_STATUSES = frozenset({"ok", "error"})
_LINE_CLIP = 160
_SALIENT_MAX = 8
_EDGE_LINES = 3

_PATH_LINE_PATTERN = r"[\w./\\-]+\.\w{1,8}:\d+"
"""`path.ext:123`: where a tool points in a file."""
_SALIENT = re.compile(
    _PATH_LINE_PATTERN  # path.ext:123
    + r"""
  | File\ "[^"]+",\ line\ \d+          # Python tracebacks
  | \b\S+::\S+                          # test ids (pytest, cargo, go)
  | \b(?:Error|Exception|Traceback|FAILED|FAIL|PANIC|panic|fatal|Fatal|FATAL|ERROR|error)\b
  | \bassert(?:ion)?\b
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class ResultFacts:
    """What a reference header says about one tool result."""

    ref: str
    """The `tool.result` entry id (`evt_…`)."""
    name: str
    size_bytes: int
    exit_code: int | None
    status: str
    digest: str


def evidence_text(body: bytes) -> str:
    """The text `EvidenceRead` pages through: UTF-8 with U+FFFD for undecodable bytes."""
    return body.decode("utf-8", errors="replace")


def trailer(status: str, exit_code: int | None) -> str:
    """The status lines appended to a result's text (empty for a plain success)."""
    lines = []
    if exit_code not in (None, 0):
        lines.append(f"[exit code: {exit_code}]")
    if status not in PLAIN_STATUSES:
        lines.append(f"[status: {status}]")
    return "\n".join(lines)


def _join(text: str, tail: str) -> str:
    if not tail:
        return text
    sep = "" if not text or text.endswith("\n") else "\n"
    return f"{text}{sep}{tail}"


def full_text(body: bytes, status: str, exit_code: int | None) -> str:
    """A result as the model sees it when nothing is elided."""
    text = render_output_text(body) if body else "(no output)"
    return _join(text, trailer(status, exit_code))


def evidence_call(ref: str, **extra: int | str) -> str:
    """The exact EvidenceRead call, e.g. `EvidenceRead {"offset":12288,"ref":"evt_…"}`."""
    args: dict[str, int | str] = {"ref": ref, **extra}
    return "EvidenceRead " + canonical_json(dict(args.items()))


def header(facts: ResultFacts, note: str = "") -> str:
    """The `[ref …]` header line."""
    items = [f"ref {facts.ref}", facts.name, f"{facts.size_bytes:,} bytes"]
    if facts.exit_code is not None:
        items.append(f"exit {facts.exit_code}")
    if facts.status not in PLAIN_STATUSES:
        items.append(facts.status)
    items.append(facts.digest[:19])
    if note:
        items.append(note)
    return "[" + " · ".join(items) + "]"


def _clip(line: str) -> str:
    return line if len(line) <= _LINE_CLIP else line[: _LINE_CLIP - 1] + "…"


def salient_lines(lines: list[str], skip: set[int]) -> list[tuple[int, str]]:
    """Lines worth keeping in a reference, as (1-based line number, text); bounded, in order."""
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if number - 1 in skip:
            continue
        stripped = line.strip()
        if not stripped or stripped in seen or not _SALIENT.search(line):
            continue
        seen.add(stripped)
        found.append((number, _clip(line.rstrip())))
    if len(found) > _SALIENT_MAX:
        # The first few say where it started going wrong, the last few how it ended.
        found = found[:3] + found[-(_SALIENT_MAX - 3) :]
    return found


def reference_text(facts: ResultFacts, body: bytes) -> str:
    """A projected result: header, a few head/tail/salient lines, and the EvidenceRead call."""
    text = evidence_text(body)
    lines = text.splitlines()
    head = list(range(min(_EDGE_LINES, len(lines))))
    tail = list(range(max(len(head), len(lines) - _EDGE_LINES), len(lines)))
    out = [header(facts, "projected")]
    out.extend(f"{i + 1}| {_clip(lines[i])}" for i in head)
    marks = salient_lines(lines, set(head) | set(tail))
    if marks or len(lines) > len(head) + len(tail):
        out.append(f"… {len(lines) - len(head) - len(tail):,} more lines; salient ones:")
        out.extend(f"{n}| {line}" for n, line in marks)
    out.extend(f"{i + 1}| {_clip(lines[i])}" for i in tail)
    units = utf16_len(text)
    out.append(f"[full text, {units:,} UTF-16 units: {evidence_call(facts.ref)}]")
    return _join("\n".join(out), trailer(facts.status, facts.exit_code))


def preview_chars(usable_tokens: int) -> int:
    """Preview size for large outputs: 16 KiB at big windows, about 1/16 of the budget below.

    A 12 KiB head + 4 KiB tail keeps facts a tiny stub loses at big windows, but at a small
    window one preview must not take a large share of the room.
    """
    return max(2_048, min(16_384, usable_tokens * 3 // 16))


def _cut_head(text: str, size: int) -> str:
    if len(text) <= size:
        return text
    cut = text.rfind("\n", size * 3 // 4, size)
    return text[: cut + 1 if cut != -1 else size]


def _cut_tail(text: str, size: int) -> str:
    if len(text) <= size:
        return text
    start = len(text) - size
    cut = text.find("\n", start, start + size // 4)
    return text[cut + 1 if cut != -1 else start :]


_EXCEPTION = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception|Exit|Interrupt)|Traceback)\b.*")
_FRAME = re.compile(r'^\s*File "[^"]+", line \d+')
_DEFINITION = re.compile(r"^\s*(?:async\s+def|def|class|func|fn|function|interface|struct)\s+\w")
_PATH_LINE = re.compile(_PATH_LINE_PATTERN)
_PATH_HINT = re.compile(r"\.\w{1,8}:\d")
"""What every `_PATH_LINE` match holds (the dot, extension, colon and first digit)."""


def _rank(line: str) -> int | None:
    """How much a hidden line matters to someone reading a preview (lower first), or None.

    Exceptions and traceback frames say what broke and where; error and failure lines and test
    ids come next; then definitions (the outline of a dumped file); then `path:line` mentions.
    """
    if _EXCEPTION.match(line) or _FRAME.match(line):
        return 0
    path = _PATH_LINE.search(line)
    if path is None and _SALIENT.search(line):
        return 1
    if _DEFINITION.match(line):
        return 2
    return 3 if path is not None else None


_TRIGGERS = (
    *("Error", "Exception", "Exit", "Interrupt", "Traceback", 'File "', "::", "assert"),
    *("def", "class", "func", "fn", "interface", "struct"),
    *("FAIL", "PANIC", "panic", "fatal", "Fatal", "FATAL", "ERROR", "error"),
)
"""Literals every class of `_rank` but `path:line` needs: a line without one ranks 3 or None."""


def _line_ranks(lines: list[str]) -> list[int | None]:
    """`_rank` of every line, the same values without running every pattern on every line.

    Only a line holding a `_TRIGGERS` literal can rank 0, 1 or 2, so only those go through the
    full `_rank`; the rest are `path:line` mentions (3) or nothing, and only a line holding a
    `_PATH_HINT` can be a mention. Literals and hints are found in the joined text (none spans
    a line break, so a hit names exactly the line that holds it).
    """
    text = "\n".join(lines)
    # ends[i]: where line i + 1 starts in `text`.
    ends = [end + i + 1 for i, end in enumerate(accumulate(map(len, lines)))]
    ranks: list[int | None] = [None] * len(lines)
    # Only a line holding `.ext:1` can hold `path.ext:123`: the others are not searched (the
    # full pattern backtracks over every run of word characters).
    tried = -1
    for hint in _PATH_HINT.finditer(text):
        index = bisect_right(ends, hint.start())
        if index != tried and _PATH_LINE.search(lines[index]):
            ranks[index] = 3
        tried = index
    hot: set[int] = set()
    for word in _TRIGGERS:
        # str.find runs at memory speed; one hit per line is enough, so skip to the next line.
        at = text.find(word)
        while at != -1:
            index = bisect_right(ends, at)
            hot.add(index)
            at = text.find(word, ends[index]) if index < len(ends) else -1
    for index in hot:
        ranks[index] = _rank(lines[index])
    return ranks


def _suffix_ranks(lines: list[str], whole: list[str], ranks: list[int | None]) -> list[int | None]:
    """`_line_ranks(lines)` when `lines` are the last lines of `whole` (ranked as `ranks`).

    A preview's hidden middle is the end of the text before its tail, the line a cut goes
    through blanked: the ranks already found are reused for every line that is the same.
    """
    start = len(whole) - len(lines)
    if not lines or start < 0 or lines[1:-1] != whole[start + 1 : len(whole) - 1]:
        return _line_ranks(lines)
    out = ranks[start:]
    for i in {0, len(lines) - 1}:
        if lines[i] != whole[start + i]:
            out[i] = _rank(lines[i])
    return out


def notable_lines(
    lines: list[str], budget: int, ranks: list[int | None] | None = None
) -> list[tuple[int, str]]:
    """Lines of note in a hidden stretch, as (index in `lines`, clipped text), in order.

    The most telling classes of `_rank` are taken first, each in order of position, until
    `budget` characters are used; the code line under a traceback frame goes with its frame.
    Repeated lines are taken once. Pure and deterministic. `ranks`, when given, is
    `_line_ranks(lines)`, already known.
    """
    base = _line_ranks(lines) if ranks is None else ranks
    final = list(base)
    # The passes below are C-level maps: a 3,000-line middle is ranked in a few milliseconds.
    for index in compress(range(len(base)), map(eq, base, repeat(0))):
        # A frame ranks 0, and the code line under it (nothing by itself) goes with it.
        after = index + 1
        if after < len(lines) and base[after] is None and _FRAME.match(lines[index]):
            final[after] = 0
    kept = list(compress(range(len(final)), map(is_not, final, repeat(None))))
    # The first line of each text: a dict built backwards keeps the earliest index per key.
    texts = list(map(str.strip, map(lines.__getitem__, kept)))
    first = dict(zip(reversed(texts), reversed(kept), strict=True))
    first.pop("", None)
    # By rank, then position (a stable sort of positions); every line in `first` has a rank.
    ranked = sorted(sorted(first.values()), key=cast("list[int]", final).__getitem__)
    # A line costs its `_clip` and 8; past the point where even the shortest line still to come
    # does not fit, nothing more can be taken.
    sizes = list(map(len, map(str.rstrip, map(lines.__getitem__, ranked))))
    shortest_after = list(accumulate(reversed(sizes), min))[::-1]
    chosen: list[int] = []
    used = 0
    for index, size, shortest in zip(ranked, sizes, shortest_after, strict=True):
        if used + min(shortest, _LINE_CLIP) + 8 > budget:
            break
        cost = min(size, _LINE_CLIP) + 8
        if used + cost > budget:
            continue
        chosen.append(index)
        used += cost
    return [(i, _clip(lines[i].rstrip())) for i in sorted(chosen)]


def _whole_lines(head: str, rest: str) -> list[str]:
    """The lines between `head` and the tail, a line cut by either end blanked.

    A line of note is quoted by its line number, so a piece of a line (the head or the tail may
    end or start mid-line) must not be quoted as if it were the whole line.
    """
    lines = rest[len(head) :].splitlines()
    if lines and head and not head.endswith("\n"):
        lines[0] = ""
    if lines and not rest.endswith("\n"):
        lines[-1] = ""
    return lines


def preview_text(facts: ResultFacts, body: bytes, chars: int) -> str:
    """A large output as it enters active memory: header, head, elision note, tail, calls.

    Of the `chars` the preview may use, a quarter goes to the tail and up to an eighth to the
    lines of note in the hidden middle (`notable_lines`: what broke, where, the outline of a
    dumped file) — a log's traceback or a file's definitions are what is looked for later, and
    they are rarely at either end. The head takes the rest.
    """
    text = evidence_text(body)
    tail = _cut_tail(text, chars // 4)
    rest = text[: len(text) - len(tail)]
    head = _cut_head(rest, chars * 3 // 4)
    middle_lines = _whole_lines(head, rest)
    notes: list[tuple[int, str]] = []
    if middle_lines:
        # Both middles below are ends of `rest`: its lines are ranked once.
        rest_lines = rest.splitlines()
        rest_ranks = _line_ranks(rest_lines)
        ranks = _suffix_ranks(middle_lines, rest_lines, rest_ranks)
        notes = notable_lines(middle_lines, chars // 8, ranks)
        if notes:
            head = _cut_head(rest, chars * 3 // 4 - sum(len(n) + 8 for _, n in notes))
            middle_lines = _whole_lines(head, rest)
            ranks = _suffix_ranks(middle_lines, rest_lines, rest_ranks)
            notes = notable_lines(middle_lines, chars // 8, ranks)
    if len(head) == len(rest):
        head, tail = text, ""
    hidden_from = utf16_len(head)
    hidden = text[len(head) : len(text) - len(tail)]
    hidden_units = utf16_len(hidden)
    note = "large output, preview"
    parts = [header(facts, note)]
    if body and text != render_output_text(body):
        parts.append("[output is not valid UTF-8; undecodable bytes shown as \ufffd]")
    parts.append(head.rstrip("\n"))
    if hidden_units:
        call = evidence_call(facts.ref, offset=hidden_from)
        parts.append(
            f"[… {hidden_units:,} UTF-16 units not shown (units {hidden_from:,}–"
            f"{hidden_from + hidden_units:,}); read them with {call}, "
            f"or find text with {evidence_call(facts.ref, search='<text>')}]"
        )
        if notes:
            first_line = head.count("\n") + 1
            parts.append("[lines of note in the part not shown, by line number:]")
            parts.extend(f"{first_line + i}| {line}" for i, line in notes)
            parts.append("[end of lines of note]")
    if tail:
        parts.append(tail.rstrip("\n"))
    return _join("\n".join(parts), trailer(facts.status, facts.exit_code))
