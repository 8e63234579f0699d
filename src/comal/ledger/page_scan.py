"""Rows read straight from a ledger file's pages, for salvage when SQLite cannot read it.

A flipped bit in the schema (page 1) or a zeroed interior page makes SQLite refuse the file,
or lose every row below the damaged page, though the pages holding the rows are intact.
`scan_pages(path)` reads the file as the SQLite file format describes it
(https://www.sqlite.org/fileformat2.html) without trusting the schema or any interior page:
every page that is a table b-tree leaf is decoded cell by cell (payloads that spill onto
overflow pages are followed, a chain that leaves the file or loops is dropped), and each
record is recognised by its shape:

- an entry: `(NULL, 'evt_…', session_id, kind, payload, 'sha256:…', created_at)`, its seq the
  rowid; kept only when its kind and payload hash to its content hash;
- a blob: `('sha256:…', size, data)`, kept only when the data hashes to its key;
- a session: `(uuid, parent, cwd, model, title, source, status, created_at, …)`; its newest
  copy by last activity wins (a freed page can hold an older one).

An entry's id and session id are not covered by its hash, so a row found on a page must also
be named by the file's own indexes, read from their pages the same way (`(id, seq)` in the
id index and `(session_id, seq)` in the session index), with both ids well formed; a session
row, by its id index. A row the indexes do not confirm is left out: a flipped byte in an id
must not come back as a forged entry.

Nothing here decides what is intact beyond those hashes: the caller merges these rows with
what SQL reads (`salvage.py`). The file is only read.
"""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass, field
from pathlib import Path

from comal.ledger.canonical import content_hash
from comal.ledger.verify import EntryRow
from comal.messages import digest_bytes

_LEAF_TABLE = 0x0D
_LEAF_INDEX = 0x0A
_INTERIOR_INDEX = 0x02
_EVT_ID = re.compile(r"evt_[0-9a-f]{32}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512)
_STATUSES = frozenset({"active", "finished", "failed", "interrupted"})

Value = int | float | bytes | None


@dataclass(frozen=True, slots=True)
class PageSession:
    """A sessions row as found on a page (text columns decoded, damage replaced)."""

    id: str
    parent_id: str | None
    cwd: str
    model: str
    title: str
    source: str
    status: str
    created_at: int
    last_activity_at: int


@dataclass(slots=True)
class PageScan:
    """What the pages hold that verifies."""

    entries: dict[str, EntryRow] = field(default_factory=dict)
    """Intact entries by `evt_` id."""
    blobs: dict[str, bytes] = field(default_factory=dict)
    """Blobs whose data hashes to their key, by digest."""
    sessions: dict[str, PageSession] = field(default_factory=dict)
    pages: int = 0
    indexed: set[tuple[str, int]] = field(default_factory=set)
    """(text key, rowid) of the index records on the pages: the id indexes' `(id, rowid)` and
    the session index's `(session_id, seq, rowid)`."""
    candidates: list[EntryRow] = field(default_factory=list)
    """Entries that hash right, before the indexes confirm their ids."""
    session_rows: list[tuple[int, PageSession]] = field(default_factory=list)

    def confirm(self) -> None:
        """Keep only the rows the indexes name (see the module docstring)."""
        for row in self.candidates:
            if (row.id, row.seq) in self.indexed and (row.session_id, row.seq) in self.indexed:
                self.entries.setdefault(row.id, row)
        for rowid, session in self.session_rows:
            if (session.id, rowid) not in self.indexed:
                continue
            known = self.sessions.get(session.id)
            if known is None or known.last_activity_at <= session.last_activity_at:
                self.sessions[session.id] = session


def _varint(data: bytes | mmap.mmap, at: int) -> tuple[int, int]:
    """A SQLite varint at `at`: (value, offset after it)."""
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


def _page_size(data: mmap.mmap) -> int:
    """The page size the header states, or the first plausible one if it is damaged."""
    raw = int.from_bytes(data[16:18], "big")
    size = 65536 if raw == 1 else raw
    if size in _PAGE_SIZES and len(data) % size == 0:
        return size
    return next((s for s in _PAGE_SIZES if len(data) % s == 0), 4096)


class _File:
    def __init__(self, data: mmap.mmap, page_size: int, reserved: int) -> None:
        self.data = data
        self.size = page_size
        self.usable = page_size - reserved
        self.count = len(data) // page_size

    def page(self, number: int) -> bytes:
        start = (number - 1) * self.size
        return self.data[start : start + self.size]

    def payload(self, page: bytes, at: int, length: int, *, index: bool = False) -> bytes | None:
        """A cell's payload of `length` bytes starting at `at`, overflow pages followed."""
        u = self.usable
        most = ((u - 12) * 64 // 255) - 23 if index else u - 35
        if length <= most:
            return page[at : at + length] if at + length <= len(page) else None
        least = ((u - 12) * 32 // 255) - 23
        local = least + (length - least) % (u - 4)
        if local > most:
            local = least
        out = bytearray(page[at : at + local])
        following = int.from_bytes(page[at + local : at + local + 4], "big")
        seen: set[int] = set()
        while len(out) < length:
            if not 1 <= following <= self.count or following in seen:
                return None
            seen.add(following)
            over = self.page(following)
            following = int.from_bytes(over[:4], "big")
            out += over[4 : 4 + min(u - 4, length - len(out))]
        return bytes(out)


def _record(payload: bytes) -> list[Value] | None:
    """The values of one record, or None when its header does not describe its bytes."""
    try:
        header_size, at = _varint(payload, 0)
        types: list[int] = []
        while at < header_size:
            kind, at = _varint(payload, at)
            types.append(kind)
        body = header_size
        values: list[Value] = []
        for kind in types:
            if kind == 0:
                values.append(None)
            elif kind in (8, 9):
                values.append(kind - 8)
            elif 1 <= kind <= 6:
                width = (0, 1, 2, 3, 4, 6, 8)[kind]
                values.append(int.from_bytes(payload[body : body + width], "big", signed=True))
                body += width
            elif kind == 7:
                body += 8
                values.append(0.0)
            elif kind >= 12:
                width = (kind - 12) // 2
                values.append(bytes(payload[body : body + width]))
                body += width
            else:
                return None
        return values if body == len(payload) else None
    except IndexError:
        return None


def _text(value: Value) -> str | None:
    if not isinstance(value, bytes):
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _take(found: PageScan, rowid: int, values: list[Value]) -> None:
    """File one record under the table its shape says it belongs to, if it verifies."""
    texts = [_text(v) for v in values]
    if len(values) == 7 and values[0] is None and (texts[1] or "").startswith("evt_"):
        entry_id, session_id, kind, payload, digest = texts[1:6]
        created = values[6]
        if entry_id is None or session_id is None or kind is None or payload is None:
            return
        if digest is None or not isinstance(created, int):
            return
        if not _EVT_ID.fullmatch(entry_id) or not _UUID.fullmatch(session_id):
            return
        try:
            ok = content_hash(kind, payload) == digest
        except UnicodeEncodeError:
            ok = False
        if ok:
            found.candidates.append(
                EntryRow(rowid, entry_id, session_id, kind, payload, digest, created)
            )
        return
    if len(values) == 3 and (texts[0] or "").startswith("sha256:"):
        data = values[2]
        if isinstance(data, bytes) and digest_bytes(data) == texts[0]:
            found.blobs[texts[0] or ""] = data
        return
    if len(values) >= 11 and texts[6] in _STATUSES and texts[0] and len(texts[0]) == 36:
        created, last = values[7], values[9]
        if not isinstance(created, int) or not isinstance(last, int):
            return
        if not _UUID.fullmatch(texts[0]):
            return
        row = PageSession(
            texts[0],
            texts[1],
            texts[2] or "",
            texts[3] or "",
            texts[4] or "",
            texts[5] or "salvage",
            texts[6] or "interrupted",
            created,
            last,
        )
        found.session_rows.append((rowid, row))


def _index(file: _File, found: PageScan, number: int) -> None:
    """The (key, rowid) pairs of an index page's two-column records."""
    page = file.page(number)
    head = 100 if number == 1 else 0
    kind = page[head]
    interior = kind == _INTERIOR_INDEX
    start = head + (12 if interior else 8)
    cells = int.from_bytes(page[head + 3 : head + 5], "big")
    for k in range(cells):
        pointer = start + 2 * k
        at = int.from_bytes(page[pointer : pointer + 2], "big") + (4 if interior else 0)
        if not start <= at < len(page):
            continue
        try:
            length, at = _varint(page, at)
        except IndexError:
            continue
        payload = file.payload(page, at, length, index=True)
        values = _record(payload) if payload is not None else None
        if values is None or not isinstance(values[-1], int):
            continue
        # `(id, rowid)` (a unique text key) or `(session_id, seq, rowid)` (seq is the rowid).
        if len(values) == 2 or (len(values) == 3 and values[1] == values[2]):
            key = _text(values[0])
            if key is not None:
                found.indexed.add((key, values[-1]))


def _leaf(file: _File, found: PageScan, number: int) -> None:
    page = file.page(number)
    head = 100 if number == 1 else 0
    if len(page) < head + 12:
        return
    if page[head] in (_LEAF_INDEX, _INTERIOR_INDEX):
        _index(file, found, number)
        return
    if page[head] != _LEAF_TABLE:
        return
    cells = int.from_bytes(page[head + 3 : head + 5], "big")
    for k in range(cells):
        pointer = head + 8 + 2 * k
        at = int.from_bytes(page[pointer : pointer + 2], "big")
        if not head + 8 <= at < len(page):
            continue
        try:
            length, at = _varint(page, at)
            rowid, at = _varint(page, at)
        except IndexError:
            continue
        payload = file.payload(page, at, length)
        values = _record(payload) if payload is not None else None
        if values is not None:
            _take(found, rowid, values)


def scan_pages(path: Path) -> PageScan:
    """Every intact entry, blob and session row found on the pages of the file at `path`."""
    found = PageScan()
    with path.open("rb") as handle:
        if path.stat().st_size < 512:
            return found
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            size = _page_size(data)
            reserved = data[20] if data[20] < 64 else 0
            file = _File(data, size, reserved)
            found.pages = file.count
            for number in range(1, file.count + 1):
                _leaf(file, found, number)
    found.confirm()
    return found
