"""The page index of a large blob: where its text's UTF-16 units and lines fall, every stride.

A blob's *text* is its bytes decoded as UTF-8 with U+FFFD for undecodable bytes (what
EvidenceRead pages through), measured in UTF-16 code units. The index records, about every
`STRIDE` bytes, a *point*: a byte offset, the UTF-16 units and the newlines of the text
before it. A point is always a byte that is not a UTF-8 continuation byte: there the whole-text
decoder has nothing pending, whatever came before (a character, or a run of bytes it cannot
decode, always ends before such a byte), so the bytes between two points decode on their own to
exactly the whole text's characters between them — valid UTF-8 or not. A page then reads and
decodes only the bytes of a few strides.

It is stored beside the blob (`blob_pages`, migration `m003_page_index`) when a blob of at
least `INDEX_MIN_BYTES` is stored, and built on first use (then stored) for blobs written
before that table existed. It is derived data: a row whose checksum or shape does not match
its blob is never used — the index is rebuilt from the bytes — so a damaged index can cost
time, never a wrong byte.
"""

from __future__ import annotations

import hashlib
import sqlite3
import struct
from collections.abc import Callable
from dataclasses import dataclass

from comal.ledger.conn import Conn

STRIDE = 1 << 16
"""Bytes between points: a page decodes at most a few strides."""
INDEX_MIN_BYTES = 1 << 20
"""Blobs at least this large get an index when stored; smaller ones are decoded whole."""
_READ_BYTES = 1 << 20
_FORMAT = 1
"""Version of the packed points; another value is read as an index to rebuild."""
_PACK = struct.Struct("<qqq")
_ASTRAL_LEADS = bytes(range(0xF0, 0x100))
_READ_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)
"""What reading a damaged file raises (a UnicodeDecodeError when Python decodes an error
message quoting damaged schema text): an index that does not read is one to rebuild."""

ReadRange = Callable[[int, int], bytes]
"""`read(start, end)`: the blob's bytes in [start, end)."""


def utf16_len(text: str) -> int:
    """Length of `text` in UTF-16 code units (a character above U+FFFF counts 2)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


@dataclass(frozen=True, slots=True)
class PageIndex:
    """The points of one blob, first at byte 0 and last at its end."""

    size: int
    utf8: bool
    """True when the whole blob is valid UTF-8 (its text is its bytes, decoded)."""
    byte_at: tuple[int, ...]
    unit_at: tuple[int, ...]
    lines_at: tuple[int, ...]
    """Newlines before each point (a newline byte is always one character of the text)."""

    @property
    def total_units(self) -> int:
        """Length of the whole text in UTF-16 units."""
        return self.unit_at[-1]

    def encode(self) -> bytes:
        """The packed points (what `blob_pages.points` stores)."""
        return b"".join(
            _PACK.pack(b, u, n)
            for b, u, n in zip(self.byte_at, self.unit_at, self.lines_at, strict=True)
        )

    @classmethod
    def decode(cls, size: int, utf8: bool, packed: bytes) -> PageIndex | None:
        """The index packed in `packed` for a blob of `size` bytes, or None when its shape is
        not an index of such a blob (offsets out of order, not from 0 to `size`)."""
        if len(packed) % _PACK.size or not packed:
            return None
        rows = list(_PACK.iter_unpack(packed))
        byte_at = tuple(r[0] for r in rows)
        unit_at = tuple(r[1] for r in rows)
        lines_at = tuple(r[2] for r in rows)
        if byte_at[0] != 0 or unit_at[0] != 0 or lines_at[0] != 0 or byte_at[-1] != size:
            return None
        for i in range(1, len(rows)):
            if not (
                byte_at[i - 1] < byte_at[i]
                and unit_at[i - 1] <= unit_at[i]
                and lines_at[i - 1] <= lines_at[i]
            ):
                return None
        return cls(size, utf8, byte_at, unit_at, lines_at)


def _units(chunk: bytes) -> tuple[int, bool]:
    """(UTF-16 units of the chunk's text, whether it is valid UTF-8)."""
    if chunk.isascii():
        return len(chunk), True
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return utf16_len(chunk.decode("utf-8", errors="replace")), False
    # Valid UTF-8: a character above U+FFFF (2 units) is the one with a lead byte from F0.
    return len(text) + len(chunk) - len(chunk.translate(None, _ASTRAL_LEADS)), True


def build_page_index(size: int, read: ReadRange, stride: int = STRIDE) -> PageIndex:
    """The index of a blob of `size` bytes, read a piece at a time through `read`.

    A point goes after every `stride` bytes, moved forward to the next byte that is not a
    UTF-8 continuation byte: there the decoder has nothing pending whatever came before (a
    character or an undecodable run always ends before such a byte), so each span decodes on
    its own exactly as the whole text does.
    """
    byte_at, unit_at, lines_at = [0], [0], [0]
    units = lines = 0
    utf8 = True
    data = b""  # read but not yet indexed: the bytes from offset `base`
    base = 0
    at = 0  # position in `data` of the next point's span
    while base + at < size:
        if len(data) - at < stride + 4 and base + len(data) < size:
            piece = read(base + len(data), min(size, base + len(data) + _READ_BYTES))
            if not piece:
                raise ValueError(f"blob ended at byte {base + len(data):,} of {size:,}")
            data, base, at = data[at:] + piece, base + at, 0
            continue
        end = min(at + stride, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:
            end += 1
        if end == len(data) and base + len(data) < size:
            # A run of continuation bytes reaches past what is read: read on.
            piece = read(base + len(data), min(size, base + len(data) + _READ_BYTES))
            if not piece:
                raise ValueError(f"blob ended at byte {base + len(data):,} of {size:,}")
            data += piece
            continue
        chunk = data[at:end]
        count, valid = _units(chunk)
        units += count
        utf8 = utf8 and valid
        lines += chunk.count(b"\n")
        at = end
        byte_at.append(base + at)
        unit_at.append(units)
        lines_at.append(lines)
    if byte_at[-1] != size:  # only an empty blob: its one point is also its end
        byte_at.append(size)
        unit_at.append(units)
        lines_at.append(lines)
    return PageIndex(size, utf8, tuple(byte_at), tuple(unit_at), tuple(lines_at))


def index_of_bytes(data: bytes, stride: int = STRIDE) -> PageIndex:
    """The index of bytes already in memory (no copy of them is made)."""
    view = memoryview(data)
    return build_page_index(len(data), lambda start, end: view[start:end].tobytes(), stride)


def _checksum(utf8: bool, packed: bytes) -> str:
    digest = hashlib.sha256(bytes([_FORMAT, int(utf8)]) + packed).hexdigest()
    return f"sha256:{digest}"


def write_page_index(conn: Conn, digest: str, index: PageIndex) -> None:
    """Store (or replace) the index of blob `digest`, inside the caller's transaction."""
    packed = index.encode()
    conn.execute("DELETE FROM blob_pages WHERE hash = ?", (digest,))
    conn.execute(
        "INSERT INTO blob_pages (hash, format, utf8, points, checksum) VALUES (?, ?, ?, ?, ?)",
        (digest, _FORMAT, int(index.utf8), packed, _checksum(index.utf8, packed)),
    )


def stored_page_index(conn: Conn, digest: str | bytes, size: int) -> PageIndex | None:
    """The stored index of blob `digest` (`size` bytes), or None when there is none or it does
    not check (checksum, format, shape): the caller rebuilds it from the bytes."""
    try:
        row = conn.execute(
            "SELECT format, utf8, points, checksum FROM blob_pages WHERE hash = ?", (digest,)
        ).fetchone()
    except _READ_ERRORS:
        return None
    if row is None:
        return None
    fmt, utf8, packed, checksum = row
    if isinstance(checksum, bytes):  # read by a damage-tolerant scan, text as bytes
        checksum = checksum.decode("utf-8", "replace")
    if fmt != _FORMAT or utf8 not in (0, 1) or not isinstance(packed, bytes):
        return None
    if checksum != _checksum(bool(utf8), packed):
        return None
    return PageIndex.decode(size, bool(utf8), packed)


def page_index_problems(conn: sqlite3.Connection) -> list[str]:
    """A problem line for every stored index that would not be used (for `verify`): it is
    rebuilt from its blob when read, so this is damage to report, not data lost."""
    problems: list[str] = []
    try:
        digests = [row[0] for row in conn.execute("SELECT hash FROM blob_pages")]
    except _READ_ERRORS as exc:
        return [f"page index table: unreadable ({exc}); indexes are rebuilt when read"]
    for raw in digests:
        digest = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        try:
            row = conn.execute(
                "SELECT length(data) FROM blobs WHERE hash = ?", (digest,)
            ).fetchone()
        except _READ_ERRORS:
            row = None
        if row is None or not isinstance(row[0], int):
            problems.append(f"page index of blob {digest}: its blob does not read")
        elif stored_page_index(conn, digest, row[0]) is None:
            problems.append(
                f"page index of blob {digest} does not check; it is rebuilt from the blob when read"
            )
    return problems
