"""The working set: the outputs the session is working with, which no event takes out of view.

An agent uses what it has just seen: the file it read two calls ago, the test log it is fixing.
How far back "just" reaches differs by session (a quick edit loop reuses the last output; a
refactor reads five files, then edits them one by one), so it is measured, not set:

- **Reuse.** A *name* is an identifier (5+ characters with `_` or an inner capital) or a path
  (2+ `/`-separated components) — what an agent copies from an output into a call. Each time a
  model call writes a name that an earlier tool output held, and the name was in no earlier
  message of the conversation, that is a *reuse* at a *distance*: how many calls back the
  newest output holding it lies (the output of the call just before is at distance 1).
- **Reach.** The session's reach is the distance within which 9 in 10 of its measured reuses
  fall (nearest rank, over the reuses of its latest `SCAN_CALLS` calls — the same share the
  seed takes for its threshold: the working set holds what the session uses nine times out
  of ten). Before the session has reused anything, the reach is one call: the newest results
  always stay, as they always have.
- **Working set.** The results of the newest `reach` calls, and for every file those calls work
  on without reading it (an edit, a small output), the newest read of that file (an output on
  it over `LARGE_READ_BYTES`), however old: the agent that edits a file works from its last
  read.

Stage 1 never projects the working set, and a checkpoint's tail starts early enough to keep it
verbatim, within the cost bound of `pressure.py` (docs/context.md, "The working set"). Pure:
the same blocks give the same set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from comal.context.relief.workstate import PATH_KEYS, first_arg
from comal.context.view.build import ResultTexts
from comal.context.view.conversation import Block, ResultEntry
from comal.messages import canonical_json

SCAN_CALLS = 100
"""Reuse is measured over this many latest calls: a bound on the work of a derivation (every
output scanned once), long enough to hold several reaches of any session."""
REUSE_SHARE = 0.9
"""The share of measured reuses the reach covers (see module docstring)."""
SCAN_BYTES = 32 * 1024
"""Names are read from an output's first and last halves of this many bytes: the reach is a
statistic of many reuses, and a long output's ends hold most of the names an agent copies
(bounds the work of a derivation in a new process)."""

_TOKEN = re.compile(r"[\w./@-]{3,}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{4,}")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
_NAMES: dict[str, frozenset[str]] = {}
"""Names of recorded outputs by entry id (an output never changes)."""


def names(text: str) -> frozenset[str]:
    """The names (identifiers and paths) of a text, as the module docstring defines them.

    The text is cut into runs of word characters, `.`, `/`, `@` and `-` (one fast pass; each
    distinct run is then read once): a run holding `/` with two or more components is a path,
    and the identifiers inside a run count when they hold `_` or an inner capital."""
    found: set[str] = set()
    for token in set(_TOKEN.findall(text)):
        if "/" in token:
            path = token.strip(".-")
            if sum(1 for piece in path.split("/") if piece) >= 2:
                found.add(path)
        if "_" in token or _INNER_CAPITAL.search(token):
            for ident in _IDENT.findall(token):
                if "_" in ident.strip("_") or _INNER_CAPITAL.search(ident):
                    found.add(ident)
    return frozenset(found)


def output_names(item: ResultEntry, texts: ResultTexts) -> frozenset[str]:
    """The names of one recorded output (memoized by entry id)."""
    hit = _NAMES.get(item.entry.id)
    if hit is not None:
        return hit
    body = texts.blobs.body(item.entry) or b""
    if len(body) > SCAN_BYTES:
        body = body[: SCAN_BYTES // 2] + b"\n" + body[-SCAN_BYTES // 2 :]
    found = names(body.decode("utf-8", "replace"))
    if len(_NAMES) >= 20_000:
        _NAMES.clear()
    _NAMES[item.entry.id] = found
    return found


_SAID: dict[str, frozenset[str]] = {}
"""Names of recorded messages by entry id."""


def _said(block: Block) -> frozenset[str]:
    """Names a message writes: its text and its calls' arguments (memoized by entry id)."""
    hit = _SAID.get(block.entry.id)
    if hit is not None:
        return hit
    pieces = [block.message.text]
    pieces += [canonical_json(call.arguments) for call in block.message.tool_calls]
    found = names("\n".join(pieces))
    if len(_SAID) >= 20_000:
        _SAID.clear()
    _SAID[block.entry.id] = found
    return found


@dataclass(frozen=True, slots=True)
class WorkingSet:
    """The session's measured reach and the results it keeps in view."""

    reach: int
    """Calls back within which the session's reuses fall (see module docstring)."""
    reuses: int
    """How many reuses the reach was measured from (0 when the reach was given)."""
    result_ids: frozenset[str]
    """Entry ids of the results in the working set."""
    pinned_from_seq: int | None
    """Ledger position of the oldest block holding a working-set result (a file's last read
    may lie before the recent calls)."""


def reuse_distances(blocks: Sequence[Block], texts: ResultTexts) -> list[int]:
    """Every measured reuse's distance, in calls, over the latest `SCAN_CALLS` calls."""
    calls = [i for i, block in enumerate(blocks) if block.role == "assistant"]
    start = calls[-SCAN_CALLS] if len(calls) > SCAN_CALLS else 0
    newest_output: dict[str, int] = {}
    in_messages: set[str] = set()
    distances: list[int] = []
    number = 0
    for block in blocks[start:]:
        said = _said(block)
        if block.role == "assistant":
            number += 1
            for name in said:
                source = newest_output.get(name)
                if source is not None and name not in in_messages:
                    distances.append(number - source)
        in_messages |= said
        for item in block.results:
            for name in output_names(item, texts):
                newest_output[name] = number
    return distances


def reach_of(distances: Sequence[int]) -> int:
    """The distance within which `REUSE_SHARE` of the reuses fall (nearest rank); 1 with none."""
    if not distances:
        return 1
    ordered = sorted(distances)
    rank = max(1, -(-len(ordered) * int(REUSE_SHARE * 100) // 100))
    return max(1, ordered[rank - 1])


LARGE_READ_BYTES = 2_048
"""An output on a file larger than this is a read of it; a smaller one (an edit's
acknowledgement) does not end the search for the file's last read."""


def working_set(
    blocks: Sequence[Block],
    texts: ResultTexts,
    reach: int | None = None,
    *,
    files: bool = True,
) -> WorkingSet:
    """The working set of `blocks` (see module docstring).

    Args:
        reach: calls back to keep; default the session's measured reach.
        files: whether the last reads of the files the working calls touch belong to it.
    """
    measured = 0
    if reach is None:
        distances = reuse_distances(blocks, texts)
        reach, measured = reach_of(distances), len(distances)
    keep: set[str] = set()
    paths: set[str] = set()
    seen_calls = 0
    recent: int | None = None
    index = len(blocks)
    while index > 0 and seen_calls < reach:
        index -= 1
        block = blocks[index]
        if block.role != "assistant":
            continue
        seen_calls += 1
        recent = block.seq
        keep.update(item.entry.id for item in block.results)
        for call in block.message.tool_calls:
            path = first_arg(call.arguments, PATH_KEYS)
            item = next((r for r in block.results if r.call_id == call.call_id), None)
            if path is not None and (item is None or item.facts.size_bytes <= LARGE_READ_BYTES):
                paths.add(path)
    # The newest read of each file the working calls touch but did not read, however old.
    pinned = recent
    while files and paths and index > 0:
        index -= 1
        block = blocks[index]
        by_call = {item.call_id: item for item in block.results}
        for call in reversed(block.message.tool_calls):
            path = first_arg(call.arguments, PATH_KEYS)
            item = by_call.get(call.call_id)
            if path not in paths or item is None or not item.projectable:
                continue
            keep.add(item.entry.id)
            pinned = block.seq
            if item.facts.size_bytes > LARGE_READ_BYTES:
                paths.discard(path)
    return WorkingSet(reach, measured, frozenset(keep), pinned)
