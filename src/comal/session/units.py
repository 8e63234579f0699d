"""UTF-16 code-unit arithmetic for evidence offsets.

Evidence offsets and lengths are counted in UTF-16 code units (what JavaScript, most editors and
most model-side tooling use): a character above U+FFFF counts 2. Python strings index by code
point, so every conversion goes through here.

Invariant: a slice never splits a surrogate pair — a start inside a pair moves back to the pair's
first unit, an end inside a pair moves back before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from comal.ledger.pages import utf16_len

__all__ = ["Utf16Text", "utf16_len"]


@dataclass(frozen=True, slots=True)
class Utf16Text:
    """A text with its UTF-16 encoding at hand, for slicing by code units."""

    text: str
    ascii: bool
    """True when every code point is one unit (no character above U+FFFF): units = indices."""
    encoded: bytes
    """UTF-16-LE bytes (empty when `ascii`)."""

    @classmethod
    def of(cls, text: str) -> Utf16Text:
        """Wrap `text` (lone surrogates from surrogateescape are replaced by U+FFFD)."""
        if text.isascii():
            return cls(text, True, b"")
        try:
            encoded = text.encode("utf-16-le")
        except UnicodeEncodeError:
            encoded = text.encode("utf-16-le", errors="replace")
            text = encoded.decode("utf-16-le")
        if len(encoded) == 2 * len(text):
            return cls(text, True, b"")
        return cls(text, False, encoded)

    @property
    def units(self) -> int:
        """Total length in UTF-16 code units."""
        return len(self.text) if self.ascii else len(self.encoded) // 2

    def _is_low_surrogate_at(self, unit: int) -> bool:
        if self.ascii or unit <= 0 or unit >= self.units:
            return False
        value = int.from_bytes(self.encoded[2 * unit : 2 * unit + 2], "little")
        return 0xDC00 <= value <= 0xDFFF

    def align(self, unit: int) -> int:
        """`unit` clamped to [0, units] and moved back off the middle of a surrogate pair."""
        unit = min(max(unit, 0), self.units)
        return unit - 1 if self._is_low_surrogate_at(unit) else unit

    def slice(self, start: int, end: int) -> tuple[str, int, int]:
        """The text between two unit offsets, both aligned; returns (text, start, end)."""
        start = self.align(start)
        end = max(self.align(end), start)
        if self.ascii:
            return self.text[start:end], start, end
        return self.encoded[2 * start : 2 * end].decode("utf-16-le"), start, end

    def unit_of_index(self, index: int) -> int:
        """The UTF-16 offset of the code point at Python index `index`."""
        if self.ascii:
            return index
        return utf16_len(self.text[:index])

    def index_of_unit(self, unit: int) -> int:
        """The Python index of the code point starting at (aligned) unit offset `unit`."""
        unit = self.align(unit)
        if self.ascii:
            return unit
        return len(self.encoded[: 2 * unit].decode("utf-16-le"))
