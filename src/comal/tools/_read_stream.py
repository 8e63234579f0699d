"""Read's file access in bounded memory: the file is streamed, never held whole.

`read_head` gives the first bytes (image magic, the binary sniff); `digest_file` hashes a file
chunk by chunk; `numbered_lines` decodes the whole file once, a chunk at a time, keeping only
the lines asked for (each cut to its character budget as it streams) and counting the rest,
so a 1 GB file — or a 1 GB line — costs a chunk of memory, not a gigabyte. Lines are split on
"\n" only, as grep and editors count them (a trailing "\r" is dropped from a line shown), and a
line longer than its budget is cut with a visible marker saying how many characters follow.
"""

from __future__ import annotations

import codecs
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
"""Bytes read (and decoded) at a time."""


def read_head(handle: BinaryIO, size: int) -> bytes:
    """Up to `size` bytes from the start of the open file."""
    handle.seek(0)
    return handle.read(size)


def digest_file(handle: BinaryIO) -> str:
    """`sha256:` of the whole open file, read a chunk at a time."""
    handle.seek(0)
    hasher = hashlib.sha256()
    while chunk := handle.read(CHUNK_BYTES):
        hasher.update(chunk)
    return f"sha256:{hasher.hexdigest()}"


@dataclass(slots=True)
class _Lines:
    """Line state while the text streams by."""

    first: int
    last: int
    max_chars: int
    number: int = 1
    kept: list[str] = field(default_factory=list)
    """The current line's first characters (at most max_chars + 1 of them)."""
    kept_chars: int = 0
    count: int = 0
    """Characters of the current line so far."""
    last_char: str = ""
    out: list[str] = field(default_factory=list)

    def wanted(self) -> bool:
        return self.first <= self.number <= self.last

    def add(self, piece: str) -> None:
        """Characters of the current line (no newline among them)."""
        if not piece:
            return
        if self.wanted():
            room = self.max_chars + 1 - self.kept_chars
            if room > 0:
                self.kept.append(piece[:room])
                self.kept_chars += min(room, len(piece))
        self.count += len(piece)
        self.last_char = piece[-1]

    def end_line(self) -> None:
        if self.wanted():
            length = self.count - (1 if self.last_char == "\r" else 0)
            text = "".join(self.kept)[:length]
            if length > self.max_chars:
                more = length - self.max_chars
                text = f"{text[: self.max_chars]}… [line cut: {more} more characters]"
            self.out.append(f"{self.number:>6}\t{text}")
        self.number += 1
        self.kept, self.kept_chars, self.count, self.last_char = [], 0, 0, ""

    def feed(self, text: str) -> None:
        """Decoded text, newlines included."""
        newlines = text.count("\n")
        if self.number > self.last or self.number + newlines < self.first:
            # No line of the window starts or goes on in this text: only count its lines.
            self.number += newlines
            return
        pieces = text.split("\n")
        for piece in pieces[:-1]:
            self.add(piece)
            self.end_line()
        self.add(pieces[-1])


@dataclass(frozen=True, slots=True)
class Numbered:
    """Numbered lines of a file (`number<TAB>line`, joined by newlines) and its line count."""

    body: str
    total: int
    valid_utf8: bool


def numbered_lines(
    path: Path, first: int, limit: int, max_chars: int, *, chunk_bytes: int = CHUNK_BYTES
) -> Numbered:
    """Lines `first .. first+limit-1` of the file at `path`, numbered, and its line count.

    A file that is not valid UTF-8 is decoded with U+FFFD replacements (`valid_utf8` False).
    `chunk_bytes` is how much is read and decoded at a time (what memory the read holds).
    """
    lines = _Lines(first, first + limit - 1, max_chars)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    valid = True
    ends_with_newline = False
    with path.open("rb") as handle:
        while True:
            chunk = handle.read(chunk_bytes)
            final = not chunk
            try:
                text = decoder.decode(chunk, final=final)
            except UnicodeDecodeError:
                pending, _ = decoder.getstate()
                decoder = codecs.getincrementaldecoder("utf-8")("replace")
                valid = False
                text = decoder.decode(pending + chunk, final=final)
            if text:
                ends_with_newline = text.endswith("\n")
                lines.feed(text)
            if final:
                break
    if not ends_with_newline:
        lines.end_line()  # the last line has no newline of its own
    total = lines.number - 1
    return Numbered("\n".join(lines.out), total, valid)
