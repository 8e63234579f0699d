"""Average sentence length, in words, of Markdown prose (`python scripts/prose_stats.py FILE…`).

Only prose counts: fenced code blocks, table rows, headings and HTML comments are left out,
and inline code counts as one word. A sentence ends at `.`, `!` or `?` followed by a space
(a closing bracket, quote or bold marker may come between), and at the end of a paragraph or
list item, whatever it ends with. Prints, per file, the sentences, their average and median
length and the longest one's length, so a rewrite can be measured the same way before and
after.
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

_INLINE_CODE = re.compile(r"`[^`]*`")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])[)\"'*]*\s+")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "No.")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")


def paragraphs(text: str) -> list[str]:
    """The prose paragraphs and list items of a Markdown text, each joined into one line."""
    found: list[str] = []
    current: list[str] = []
    fenced = False
    in_comment = False

    def close() -> None:
        if current:
            found.append(" ".join(current))
            current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            close()
            fenced = not fenced
            continue
        if fenced:
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if in_comment:
            in_comment = "-->" not in stripped
            continue
        if not stripped or stripped.startswith(("#", "|")):
            close()
            continue
        if _ITEM.match(line):
            close()
            stripped = _ITEM.sub("", line).strip()
        current.append(stripped)
    close()
    return found


def sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph (inline code and link targets reduced to one word)."""
    text = _LINK.sub(r"\1", _INLINE_CODE.sub("CODE", paragraph))
    for abbreviation in _ABBREVIATIONS:
        text = text.replace(abbreviation, abbreviation.replace(".", ""))
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def words(sentence: str) -> int:
    """Words of a sentence: runs of non-space characters holding a letter or a digit."""
    return sum(1 for token in sentence.split() if re.search(r"\w", token))


def main(argv: list[str]) -> int:
    """Print the figures of every file named."""
    if not argv:
        print("usage: python scripts/prose_stats.py FILE.md [FILE.md …]", file=sys.stderr)
        return 2
    for name in argv:
        path = Path(name)
        if not path.is_file():
            print(f"{name}: no such file", file=sys.stderr)
            return 1
        lengths = [
            words(s)
            for p in paragraphs(path.read_text(encoding="utf-8"))
            for s in sentences(p)
            if words(s)
        ]
        if not lengths:
            print(f"{name}: no prose")
            continue
        print(
            f"{name}: {len(lengths)} sentences, average {statistics.mean(lengths):.1f} words,"
            f" median {statistics.median(lengths):g}, longest {max(lengths)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
