"""How a tool result reads in active memory: in full, as a large-output preview, or as a reference.

One rule, used everywhere: the text of a result is `render_output_text(body)` (or `(no output)`),
followed by `[exit code: N]` when a command exited non-zero — unless the output states it itself
(an imported observation such as mini-swe-agent's `<returncode>`: `exit_code_in_output`, sent as
the agent's model saw it) — and `[status: S]` when the receipt's status is neither `ok` nor
`error` (denied, uncertain, postcondition_observed).

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
from itertools import accumulate, compress

from comal.messages import canonical_json, render_output_text
from comal.session import utf16_len
from comal.values import value

PLAIN_STATUSES = frozenset({"ok", "error"})
_LINE_CLIP = 160
_SALIENT_MAX = 8
_EDGE_LINES = 3

_PATH_LINE_PATTERN = r"(?<![\w./\\-])[\w./\\-]+\.\w{1,8}:\d+"
"""`path.ext:123`: where a tool points in a file. A match only starts where a run of path
characters does: the leftmost match always did, and without the look-behind every position of
a long run was tried again (one 200 kB line of `x` took minutes)."""
_SCAN_CHARS = 4096
"""Salient patterns are looked for in a line's first 4,096 characters (a kept line is shown
clipped to 160): an output of very long lines stays linear to scan."""
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


@value
class ResultFacts:
    """What a reference header says about one tool result."""

    ref: str
    """The `tool.result` entry id (`evt_…`)."""
    name: str
    size_bytes: int
    exit_code: int | None
    status: str
    digest: str
    exit_code_in_output: bool = False
    """The output's own text states the exit code (an imported observation): no trailer
    repeats it."""

    @property
    def trailer_exit_code(self) -> int | None:
        """The exit code the trailer states: none when the output already does."""
        return None if self.exit_code_in_output else self.exit_code


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


_SALIENT_FIRST = 3
"""Of more than `_SALIENT_MAX` salient lines, the first few say where it started going wrong;
the rest of the room goes to the last ones, which say how it ended."""


def _is_salient(line: str) -> bool:
    return _SALIENT.search(line, 0, _SCAN_CHARS) is not None


def salient_lines(lines: list[str], skip: set[int]) -> list[tuple[int, str]]:
    """Lines worth keeping in a reference, as (1-based line number, text); bounded, in order.

    The salient lines are the non-empty lines outside `skip` that match `_SALIENT`, each
    text (stripped) counted where it first does; of more than `_SALIENT_MAX`, the first
    `_SALIENT_FIRST` and the last ones are kept. Only those ends are searched: the last ones
    from the end (a line there counts when no earlier line of the same text matched), then
    the first ones from the start, up to the earliest of the last — a 3,000-line log is not
    matched line by line to keep eight of its lines.
    """
    texts = list(map(str.strip, lines))
    first = _first_unskipped(texts, skip)
    last_room = _SALIENT_MAX - _SALIENT_FIRST
    last: list[int] = []
    for index in range(len(lines) - 1, -1, -1):
        text = texts[index]
        if not text or index in skip or not _is_salient(lines[index]):
            continue
        earlier = first[text]
        if earlier != index:
            if _is_salient(lines[earlier]):
                continue  # counted where it first matched
            return _salient_in_order(lines, skip)  # a copy matched only here: read it all
        last.append(index)
        if len(last) == last_room:
            break
    else:
        return [(i + 1, _clip(lines[i].rstrip())) for i in reversed(last)]
    found = _salient_in_order(lines, skip, stop=last[-1], most=_SALIENT_FIRST + 1)
    if len(found) > _SALIENT_FIRST:
        found = found[:_SALIENT_FIRST]
    return found + [(i + 1, _clip(lines[i].rstrip())) for i in reversed(last)]


def _first_unskipped(texts: list[str], skip: set[int]) -> dict[str, int]:
    """Where each text first occurs in `texts` outside `skip`."""
    # Built from the end, so each key ends holding its first index (one pass in C).
    first = dict(zip(reversed(texts), range(len(texts) - 1, -1, -1), strict=True))
    for index in sorted(skip):
        if index >= len(texts) or first.get(texts[index]) != index:
            continue
        text, later = texts[index], index
        while True:
            try:
                later = texts.index(text, later + 1)
            except ValueError:
                del first[text]
                break
            if later not in skip:
                first[text] = later
                break
    return first


def _salient_in_order(
    lines: list[str], skip: set[int], stop: int | None = None, most: int | None = None
) -> list[tuple[int, str]]:
    """The salient lines read from the start (before index `stop`, at most `most` of them),
    or, with neither bound, all of them cut to the first and last few."""
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    for index, line in enumerate(lines[:stop]):
        if index in skip:
            continue
        stripped = line.strip()
        if not stripped or stripped in seen or not _is_salient(line):
            continue
        seen.add(stripped)
        found.append((index + 1, _clip(line.rstrip())))
        if most is not None and len(found) == most:
            break
    if stop is None and most is None and len(found) > _SALIENT_MAX:
        found = found[:_SALIENT_FIRST] + found[-(_SALIENT_MAX - _SALIENT_FIRST) :]
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
    return _join("\n".join(out), trailer(facts.status, facts.trailer_exit_code))


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
    if path is None and _SALIENT.search(line, 0, _SCAN_CHARS):
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
_TRIGGERS_FOLDED = tuple(sorted({word.lower() for word in _TRIGGERS}))
"""The same literals lowercased, searched in lowercased ASCII text: fewer passes, and a line
holding one of `_TRIGGERS` still holds one of these (a few more lines are ranked in full)."""


def _hot_ranks(lines: list[str]) -> dict[int, int | None]:
    """`_rank` of each line that holds a `_TRIGGERS` literal (and of a few more, whose rank the
    full rule gives as well); every other line ranks 3 (a `path:line` mention) or None.

    The literals are found in the joined text (none spans a line break, so a hit names exactly
    the line that holds it). ASCII text is lowercased first (same length, same offsets).
    """
    text = "\n".join(lines)
    words: tuple[str, ...] = _TRIGGERS
    if text.isascii():
        text, words = text.lower(), _TRIGGERS_FOLDED
    # ends[i]: where line i + 1 starts in `text`, made at the first hit (most logs have none).
    ends: list[int] = []
    hot: set[int] = set()
    for word in words:
        # str.find runs at memory speed; one hit per line is enough, so skip to the next line.
        at = text.find(word)
        if at != -1 and not ends:
            ends = [end + i + 1 for i, end in enumerate(accumulate(map(len, lines)))]
        while at != -1:
            index = bisect_right(ends, at)
            hot.add(index)
            at = text.find(word, ends[index]) if index < len(ends) else -1
    return {index: _rank(lines[index]) for index in hot}


def _line_ranks(lines: list[str]) -> list[int | None]:
    """`_rank` of every line, the same values without running every pattern on every line:
    only the lines `_hot_ranks` names can rank 0, 1 or 2, and only a line holding a `_PATH_HINT`
    (`.ext:1`) can be a `path:line` mention, so only those are searched for one."""
    text = "\n".join(lines)
    ends = [end + i + 1 for i, end in enumerate(accumulate(map(len, lines)))]
    ranks: list[int | None] = [None] * len(lines)
    tried = -1
    for hint in _PATH_HINT.finditer(text):
        index = bisect_right(ends, hint.start())
        if index != tried and _PATH_LINE.search(lines[index]):
            ranks[index] = 3
        tried = index
    for index, rank in _hot_ranks(lines).items():
        ranks[index] = rank
    return ranks


def _cost(line: str) -> int:
    """What quoting a line of note takes: its clipped text and 8 (number and bar)."""
    return min(len(line.rstrip()), _LINE_CLIP) + 8


_LEAST_COST = 9
"""No line of note costs less: its text is never empty."""


class _Ranks:
    """`_rank` of the lines of a hidden stretch, read only where the choice needs it.

    `hot` holds the ranks of every line that may rank 0, 1 or 2 (`_hot_ranks`); any other line
    is a `path:line` mention (3) or nothing, which is looked up only when that line's turn
    comes. Given `ranks` (every line's), nothing is looked up.
    """

    def __init__(
        self,
        lines: list[str],
        hot: dict[int, int | None] | None = None,
        ranks: list[int | None] | None = None,
    ) -> None:
        self.lines = lines
        self.ranks = ranks
        if ranks is not None:
            hot = {i: r for i, r in enumerate(ranks) if r is not None and r < 3}
        self.hot = hot if hot is not None else _hot_ranks(lines)

    def __call__(self, index: int) -> int | None:
        if self.ranks is not None:
            return self.ranks[index]
        if index in self.hot:
            return self.hot[index]
        return None if _PATH_LINE.search(self.lines[index]) is None else 3


def notable_lines(
    lines: list[str], budget: int, ranks: list[int | None] | None = None
) -> list[tuple[int, str]]:
    """Lines of note in a hidden stretch, as (index in `lines`, clipped text), in order.

    The most telling classes of `_rank` are taken first, each in order of position, until
    `budget` characters are used; the code line under a traceback frame goes with its frame.
    Repeated lines are taken once. Pure and deterministic. `ranks`, when given, is
    `_line_ranks(lines)`, already known.
    """
    return _notable(lines, budget, _Ranks(lines, ranks=ranks) if ranks is not None else None)


def _notable(lines: list[str], budget: int, rank: _Ranks | None) -> list[tuple[int, str]]:
    """`notable_lines`, with the ranks read through `rank` (default: looked up as needed).

    Every line of a class goes before the next class, a line is taken when its cost still fits,
    and a repeated line (same text once stripped) counts only where it first appears. A line's
    rank depends only on its stripped text, so repeats never span two classes but for the line
    under a frame (rank None alone, 0 under its frame), which no line of another class can
    repeat either: each class is deduplicated on its own. The many `path:line` mentions are
    read in order only until the budget is nearly used; past the first that does not fit, only
    lines short enough to fit what is left can still be taken.
    """
    rank = rank or _Ranks(lines)
    low: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for index in sorted(rank.hot):
        value = rank.hot[index]
        if value is not None and value < 3:
            low[value].append(index)
        if value == 0 and _FRAME.match(lines[index]):
            # A frame ranks 0, and the code line under it (nothing by itself) goes with it.
            after = index + 1
            if after < len(lines) and rank(after) is None:
                low[0].append(after)
    chosen: list[int] = []
    used = 0
    for value in (0, 1, 2):
        seen: set[str] = set()
        for index in sorted(low[value]):
            text = lines[index].strip()
            if not text or text in seen:
                continue
            seen.add(text)
            cost = _cost(lines[index])
            if used + cost <= budget:
                chosen.append(index)
                used += cost
    used = _mentions(lines, budget, used, rank, chosen)
    return [(i, _clip(lines[i].rstrip())) for i in sorted(chosen)]


def _mentions(lines: list[str], budget: int, used: int, rank: _Ranks, chosen: list[int]) -> int:
    """Take `path:line` mentions (rank 3) in order of position into `chosen`; returns `used`."""
    seen: set[str] = set()
    index = 0
    while index < len(lines) and budget - used >= _LEAST_COST:
        line = lines[index]
        index += 1
        if rank(index - 1) != 3:
            continue
        text = line.strip()
        if not text or text in seen:
            continue
        seen.add(text)
        cost = _cost(line)
        if used + cost <= budget:
            chosen.append(index - 1)
            used += cost
            continue
        # From here on only a line costing at most what is left can be taken: find those
        # (C-level passes), then check each in order.
        return _short_mentions(lines, index, budget, used, rank, chosen, seen)
    return used


def _short_mentions(
    lines: list[str],
    start: int,
    budget: int,
    used: int,
    rank: _Ranks,
    chosen: list[int],
    seen: set[str],
) -> int:
    rest = lines[start:]
    # What is left is less than the line just skipped cost, so under a clipped line's cost:
    # a line fits only if its own text is at most `fits` long.
    fits = budget - used - 8
    sizes = list(map(len, map(str.rstrip, rest)))
    short = list(compress(range(len(rest)), map(fits.__ge__, sizes)))
    if not short:
        return used
    texts = list(map(str.strip, rest))
    # The first position of each text after `start`: a later copy is a repeat.
    first = dict(zip(reversed(texts), range(len(rest) - 1, -1, -1), strict=True))
    for offset in short:
        text = texts[offset]
        if not text or text in seen or first[text] != offset or rank(start + offset) != 3:
            continue
        cost = min(sizes[offset], _LINE_CLIP) + 8
        if used + cost <= budget:
            chosen.append(start + offset)
            used += cost
    return used


def _middle_ranks(lines: list[str], whole: list[str], hot: dict[int, int | None]) -> _Ranks:
    """The ranks of `lines`, the last lines of `whole` (whose `_hot_ranks` are `hot`), the
    first and last maybe blanked (`_whole_lines`): what `_Ranks(lines)` would find."""
    start = len(whole) - len(lines)
    if not lines or start < 0 or lines[1:-1] != whole[start + 1 : len(whole) - 1]:
        return _Ranks(lines)
    own = {i - start: r for i, r in hot.items() if i >= start}
    for i in {0, len(lines) - 1}:
        if lines[i] != whole[start + i]:
            own.pop(i, None)
            if any(word in lines[i] for word in _TRIGGERS):
                own[i] = _rank(lines[i])
    return _Ranks(lines, own)


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


def _middle_lines(head: str, rest: str, rest_lines: list[str]) -> list[str]:
    """`_whole_lines(head, rest)`, taken from `rest_lines` (`rest.splitlines()`) when `head`
    ends a line: a break closes the head, so the lines after it split the same either way."""
    if not head.endswith("\n"):
        return _whole_lines(head, rest)
    lines = rest_lines[len(head.splitlines()) :]
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
    rest_lines = rest.splitlines()
    middle_lines = _middle_lines(head, rest, rest_lines)
    notes: list[tuple[int, str]] = []
    if middle_lines:
        # Both middles below are ends of `rest`: its literals are searched once.
        hot = _hot_ranks(rest_lines)
        notes = _notable(middle_lines, chars // 8, _middle_ranks(middle_lines, rest_lines, hot))
        if notes:
            head = _cut_head(rest, chars * 3 // 4 - sum(len(n) + 8 for _, n in notes))
            middle_lines = _middle_lines(head, rest, rest_lines)
            ranks = _middle_ranks(middle_lines, rest_lines, hot)
            notes = _notable(middle_lines, chars // 8, ranks)
    if len(head) == len(rest):
        head, tail = text, ""
    hidden_from = utf16_len(head)
    hidden_units = utf16_len(text[len(head) : len(text) - len(tail)])
    not_utf8 = bool(body) and text != render_output_text(body)
    return assemble_preview(facts, head, tail, hidden_from, hidden_units, notes, not_utf8)


def assemble_preview(
    facts: ResultFacts,
    head: str,
    tail: str,
    hidden_from: int,
    hidden_units: int,
    notes: list[tuple[int, str]],
    not_utf8: bool,
) -> str:
    """A preview from its chosen parts: header, head, the elision note with the calls that
    read the hidden units and the lines of note in them, tail, trailer. One layout, whether
    the parts were cut from the whole text or read through a page index."""
    parts = [header(facts, "large output, preview")]
    if not_utf8:
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
    return _join("\n".join(parts), trailer(facts.status, facts.trailer_exit_code))
