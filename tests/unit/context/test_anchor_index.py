"""The anchor index fed entry by entry finds what a scan of the whole session finds (hypothesis).

An engine feeds `AnchorIndex` each new entry once; the reference below is the rule read over
the whole session: the newest measured assistant message after the latest invalidating entry
whose request (also after it) is recorded, and None when that request's fingerprint differs.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from comal.context.measure.anchors import (
    PRESSURE_KINDS,
    Anchor,
    AnchorIndex,
    Fingerprint,
    measured_input,
)
from comal.ledger.entry import Entry
from comal.messages import JSONObject

CURRENT = Fingerprint("gpt-4o", checkpoint=None)
OTHER = Fingerprint("gpt-4o", checkpoint=3)

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("provider.request"), st.sampled_from([CURRENT, OTHER])),
        st.tuples(st.just("message.assistant"), st.integers(0, 12), st.booleans()),
        st.tuples(st.sampled_from(sorted(PRESSURE_KINDS)), st.none()),
        st.tuples(st.just("context.calibrated"), st.sampled_from(["context_length", "usage"])),
        st.tuples(st.just("tool.result"), st.none()),
    ),
    max_size=60,
)


def _entries(steps: list[tuple[object, ...]]) -> list[Entry]:
    out: list[Entry] = []
    for seq, step in enumerate(steps, start=1):
        kind = str(step[0])
        payload: JSONObject = {}
        if kind == "provider.request":
            fingerprint = step[1]
            assert isinstance(fingerprint, Fingerprint)
            payload = {"fingerprint": fingerprint.to_json()}
        elif kind == "message.assistant":
            back, measured = step[1], step[2]
            assert isinstance(back, int)
            payload = {"request_entry": f"evt_{max(seq - back, 1)}"}
            if measured:
                payload["usage"] = {"new_input": 100 * seq, "cache_read": 7}
        elif kind == "context.calibrated":
            payload = {"source": str(step[1])}
        out.append(Entry(seq, f"evt_{seq}", "ses_1", kind, payload, "sha256:0", seq))
    return out


def _scan(entries: Sequence[Entry], current: Fingerprint) -> Anchor | None:
    floor = 0
    for entry in entries:
        if entry.kind in PRESSURE_KINDS or (
            entry.kind == "context.calibrated" and entry.payload.get("source") == "context_length"
        ):
            floor = entry.seq
    requests = {e.id: e for e in entries if e.kind == "provider.request" and e.seq > floor}
    for entry in reversed(entries):
        if entry.seq <= floor:
            break
        if entry.kind != "message.assistant":
            continue
        measured = measured_input(entry.payload)
        request = requests.get(str(entry.payload.get("request_entry")))
        if measured is None or request is None:
            continue
        if not current.matches(request.payload.get("fingerprint")):
            return None
        return Anchor(request.id, request.seq, entry.id, measured)
    return None


@settings(max_examples=300, deadline=None)
@given(STEPS, st.lists(st.integers(1, 60), max_size=6))
def test_fed_in_pieces_it_finds_the_anchor_a_whole_scan_finds(
    steps: list[tuple[object, ...]], cuts: list[int]
) -> None:
    entries = _entries(steps)
    index = AnchorIndex()
    start = 0
    for cut in [*sorted(cuts), len(entries)]:
        index.extend(entries[start:cut])
        start = max(start, cut)
        seen = entries[:start]
        for current in (CURRENT, OTHER):
            assert index.find(current) == _scan(seen, current)
