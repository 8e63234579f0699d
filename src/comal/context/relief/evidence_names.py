"""Naming every earlier output in a checkpoint, compactly: per-session ordinals such as `E17`.

`E17` is the session's 17th `tool.result` entry, in ledger order (the numbering of the evidence
index); the ledger only grows, so an ordinal never changes meaning, and `EvidenceRead` accepts
it as `ref` beside the full `evt_…` id. A checkpoint lists every output it covers so the model
never has to look an index up to learn that an output exists:

- first the outputs the verbatim tail and the work state most likely need (`priority`, e.g.
  the newest covered turn and those on files the tail works on) with ordinal, full id, call
  and size;
- then every other output grouped by tool and file (`Read src/app.py: E3 E9 E14`), by ordinal
  alone, commands and other calls with a short description, newest groups first.

The list must fit its token budget: when it does not, descriptions go, then consecutive
ordinals of a group merge into ranges (`E20–E57`), always naming each output's ordinal.
Pure: same inputs ⇒ same lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from comal.context.measure.tokens import TokenCounter
from comal.context.relief.workstate import (
    COMMAND_KEYS,
    Call,
    clip,
    describe_call,
    first_arg,
    is_prefix,
    ordinal_ref,
    prefix_key,
)
from comal.context.view.conversation import ResultEntry
from comal.context.view.rendering import evidence_call
from comal.ledger.entry import Entry
from comal.ledger.records import Kind
from comal.values import value

INDEX_REF: Final = "index"
INDEX_CALL: Final = evidence_call(INDEX_REF)
"""The exact call that lists every result of the session (printed in checkpoints)."""

ORDINAL = re.compile(r"^E([1-9][0-9]*)$")
"""A per-session ordinal reference, as `EvidenceRead` accepts it."""


_ORDINALS: list[tuple[tuple[str, str, int], dict[str, int]]] = []
"""The last `result_ordinals` answer, by the entries it was made from (`prefix_key`)."""


def result_ordinals(entries: Sequence[Entry]) -> dict[str, int]:
    """Ordinal (1-based) of every `tool.result` entry id, in ledger order.

    Memoized for the last entries seen and extended when the session grew (a derivation asks
    for every draft it weighs; the ledger only grows, so earlier ordinals never change). The
    result is shared: callers must not modify it."""
    key = prefix_key(entries)
    if _ORDINALS and _ORDINALS[0][0] == key:
        return _ORDINALS[0][1]
    start, out = 0, {}
    if _ORDINALS and is_prefix(_ORDINALS[0][0], entries):
        start, out = _ORDINALS[0][0][2], dict(_ORDINALS[0][1])
    for entry in entries[start:]:
        if entry.kind == Kind.TOOL_RESULT:
            out[entry.id] = len(out) + 1
    _ORDINALS[:] = [(key, out)]
    return out


_NAMED = re.compile(r"\bE([1-9][0-9]*)(?:–E([1-9][0-9]*))?\b")


def named_ordinals(text: str) -> set[int]:
    """Every ordinal `text` names, singly (`E17`) or in a range (`E20–E57`)."""
    out: set[int] = set()
    for match in _NAMED.finditer(text):
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else start
        out.update(range(start, end + 1))
    return out


@value
class _Forms:
    """The ways one output may be written in its group's line, made once per listing."""

    ordinal: int
    plain: str
    """Level 0: `E17 what (exit 1)`."""
    short: str
    """Level 1: `E17 (exit 1)`."""


_GROUPS: dict[str, tuple[Call | None, str, _Forms]] = {}
"""`_listed` answers by result entry id, with the call they were made from (a derivation lists
the same outputs for every draft it weighs; an id stands for the same result, and its ordinal
for the same place, forever)."""


def _listed(call: Call | None, item: ResultEntry, ordinal: int) -> tuple[str, _Forms]:
    """(group label, the ways to write the output within its group)."""
    hit = _GROUPS.get(item.entry.id)
    if hit is not None and hit[0] is call and hit[2].ordinal == ordinal:
        return hit[1], hit[2]
    if call is None:
        label, what = item.facts.name, ""
    else:
        path = call.path
        if path is not None and first_arg(call.arguments, COMMAND_KEYS) is None:
            label, what = f"{call.name} {clip(path, 80)}", ""
        else:
            label, what = call.name, describe_call("", call.arguments, 48).strip()
    forms = _forms(ordinal, item, what)
    if len(_GROUPS) >= 100_000:
        _GROUPS.clear()
    _GROUPS[item.entry.id] = (call, label, forms)
    return label, forms


def _status(item: ResultEntry) -> str:
    notes = []
    if item.facts.exit_code not in (None, 0):
        notes.append(f"exit {item.facts.exit_code}")
    if item.facts.status not in ("ok", "error"):
        notes.append(item.facts.status)
    return f" ({', '.join(notes)})" if notes else ""


def _ranges(ordinals: Sequence[int]) -> str:
    out: list[str] = []
    start = prev = ordinals[0]
    for n in [*ordinals[1:], -1]:
        if n == prev + 1:
            prev = n
            continue
        out.append(ordinal_ref(start) if start == prev else f"E{start}–E{prev}")
        start = prev = n
    return " ".join(out)


def _forms(ordinal: int, item: ResultEntry, what: str) -> _Forms:
    ref, status = ordinal_ref(ordinal), _status(item)
    spaced = f" {what}" if what else ""
    return _Forms(ordinal, f"{ref}{spaced}{status}", ref + status)


def _groups(named: Sequence[tuple[str, _Forms]]) -> list[tuple[str, list[_Forms]]]:
    """The groups of `named` (label, forms), newest group first."""
    groups: dict[str, list[_Forms]] = {}
    for label, forms in named:
        groups.setdefault(label, []).append(forms)
    # Newest group first: the most recent work is the likeliest to be looked up again.
    return sorted(groups.items(), key=lambda kv: -kv[1][-1].ordinal)


def _grouped(groups: Sequence[tuple[str, list[_Forms]]], level: int) -> list[str]:
    lines = []
    for label, members in groups:
        if level == 0:
            items = [m.plain for m in members]
        elif level == 1:
            items = [m.short for m in members]
        else:
            items = [_ranges([m.ordinal for m in members])]
        lines.append(f"{label}: {'; '.join(items)}")
    return lines


def _titled(listed: Sequence[str], grouped: list[str]) -> list[str]:
    title = "the others, by tool and file:" if listed else "by tool and file:"
    return [title, *grouped]


def evidence_names(
    covered: Sequence[ResultEntry],
    priority: Sequence[ResultEntry],
    calls: Mapping[str, Call],
    ordinals: Mapping[str, int],
    counter: TokenCounter,
    budget_tokens: int,
    already: frozenset[str] = frozenset(),
) -> list[str]:
    """Lines naming every output in `covered` (see module docstring), within `budget_tokens`.

    Args:
        covered: the outputs the checkpoint replaces, oldest first.
        priority: those to list first with their full ids (newest first), a subset of covered.
        calls: the call each result answers, by result entry id (`collect_calls`).
        ordinals: `result_ordinals` of the session.
        counter: token counter for the budget.
        budget_tokens: the most the lines may take (the ranges form is used if none fits).
        already: entry ids of the outputs the checkpoint names already (its work state names
            them by ordinal); those are not listed again.

    The other outputs are named by ordinal alone: it is as exact a reference as the full id
    (`EvidenceRead` takes either) for a ninth of the tokens, and every token of the list is
    re-read by every call until the next event. Descriptions go first, then ordinals merge
    into ranges.
    """
    first = {p.entry.id for p in priority}
    lines: list[str] = []
    for item in priority:
        call = calls.get(item.entry.id)
        what = describe_call(call.name, call.arguments, 90) if call else item.facts.name
        n = ordinals.get(item.entry.id)
        label = f"{ordinal_ref(n)} " if n is not None else ""
        lines.append(
            f"{label}{item.facts.ref} · {what} · {item.facts.size_bytes:,} bytes{_status(item)}"
        )
    named = []
    for item in covered:
        n = ordinals.get(item.entry.id)
        if item.entry.id in first or n is None or item.entry.id in already:
            continue
        named.append(_listed(calls.get(item.entry.id), item, n))
    if not named:
        return lines
    room = budget_tokens - (counter.count("\n".join(lines)) if lines else 0)
    groups = _groups(named)
    grouped: list[str] = []
    for level in range(3):
        grouped = _grouped(groups, level)
        if counter.count("\n".join(grouped)) <= room:
            break
    return [*lines, *_titled(lines, grouped)]
