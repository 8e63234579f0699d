"""EvidenceRead: exact, paged reading of what the ledger recorded — never re-running anything.

`read_evidence(ledger, session_id, ref, …)` returns one page (at most 8,000 UTF-16 code units)
of an entry's field, or the search hits in it, with `next_call`: the exact arguments of the next
EvidenceRead (next page, or next batch of hits). Fields:
- `output`: a `tool.result` body, decoded as UTF-8 with U+FFFD for undecodable bytes (the digest
  is of the exact stored bytes);
- `text`: the text of a `message.user` / `message.assistant` / `message.summary` / `checkpoint`;
- `arguments`: the arguments of a call (`tool.started`, or the call of a `tool.result`);
- `media`: the media attached to a result, by reference: metadata only, with a note that the
  pixels are not text and that keeping a reference does not mean a model saw them.

Invariants: offsets and lengths are UTF-16 code units and a surrogate pair is never split; a
wrong `expected_digest` raises `DigestMismatchError` before anything is returned; only the
session's own entries and its direct children's are readable (`EvidenceAccessError`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Final

from comal.context.relief.evidence_names import INDEX_REF, ORDINAL
from comal.context.view.rendering import evidence_text
from comal.errors import (
    DigestMismatchError,
    EvidenceAccessError,
    EvidenceError,
    UnknownEntryError,
)
from comal.evidence.index import index_text
from comal.ledger.entry import Entry
from comal.ledger.records import (
    AssistantMessage,
    CheckpointRecord,
    Kind,
    ResponseDiscardedRecord,
    SummaryMessage,
    ToolResult,
    ToolStartedRecord,
    UserMessage,
    record_of,
)
from comal.ledger.store import Ledger
from comal.messages import JSONObject, JSONValue, digest_bytes, message_from_json
from comal.session import (
    MAX_NEEDLE_UNITS,
    MIN_BYTES,
    PAIRING_KINDS,
    PagedText,
    Utf16Text,
    paged_text,
    pair,
    snippet_of,
    utf16_len,
)

PAGE_UNITS: Final = 8_000
MAX_HITS: Final = 20
FIELDS: Final = ("output", "text", "arguments", "media")


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One match: where it starts, how long it is (UTF-16 units), its line and that line."""

    offset: int
    length: int
    line: int
    snippet: str


@dataclass(frozen=True, slots=True)
class EvidencePage:
    """One answer of EvidenceRead."""

    ref: str
    field: str
    session_id: str
    kind: str
    digest: str
    total_units: int
    offset: int
    length: int
    text: str
    hits: tuple[SearchHit, ...] = ()
    search: str | None = None
    next_call: JSONObject | None = None

    def to_json(self) -> JSONObject:
        """The JSON answer (what the tool and `comal evidence --json` return)."""
        out: JSONObject = {
            "ref": self.ref,
            "field": self.field,
            "session": self.session_id,
            "kind": self.kind,
            "digest": self.digest,
            "total_units": self.total_units,
            "offset": self.offset,
            "length": self.length,
            "text": self.text,
            "next_call": self.next_call,
        }
        if self.search is not None:
            out["search"] = self.search
            out["hits"] = [
                {"offset": h.offset, "length": h.length, "line": h.line, "snippet": h.snippet}
                for h in self.hits
            ]
        return out


@dataclass(frozen=True, slots=True)
class _Source:
    ref: str
    session_id: str
    kind: str
    field: str
    text: Utf16Text | PagedText
    digest: str

    @classmethod
    def of(cls, entry: Entry, field: str, text: Utf16Text | PagedText, digest: str) -> _Source:
        return cls(entry.id, entry.session_id, entry.kind, field, text, digest)


def _message_text(entry: Entry) -> str:
    match record_of(entry):
        case SummaryMessage(text=text) | CheckpointRecord(text=text):
            return text
        case (
            UserMessage(message=raw)
            | AssistantMessage(message=raw)
            | ResponseDiscardedRecord(message=raw)
        ) if raw is not None:
            return message_from_json(raw).text
        case _:
            raise EvidenceError(f"{entry.id} ({entry.kind}) has no text")


def _call_arguments(ledger: Ledger, entry: Entry) -> JSONValue:
    if entry.kind == Kind.TOOL_STARTED:
        return ToolStartedRecord.from_entry(entry).arguments
    if entry.kind == Kind.TOOL_RESULT:
        site = pair(ledger.entries(entry.session_id, kinds=PAIRING_KINDS)).site_of(entry)
        if site is not None and site.started is not None:
            return ToolStartedRecord.from_entry(site.started).arguments
    raise EvidenceError(f"{entry.id} ({entry.kind}) has no recorded call arguments")


def _media_text(entry: Entry) -> str:
    media = ToolResult.from_entry(entry).media if entry.kind == Kind.TOOL_RESULT else None
    if not media:
        raise EvidenceError(f"{entry.id} has no media")
    lines = []
    for index, item in enumerate(media):
        kind = item.media_type or "media"
        data = item.data_b64 or ""
        size = item.size_bytes
        size_text = f"{size:,} bytes" if size is not None else f"{len(data) * 3 // 4:,} bytes"
        digest = item.blob or (digest_bytes(data.encode()) if data else "unknown")
        lines.append(f"media {index}: {kind} · {size_text} · {digest}")
    lines.append(
        "Media are kept by reference; their pixels are not text and are not in this answer. A"
        " reference does not mean a model without vision input saw them."
    )
    return "\n".join(lines)


def _load(ledger: Ledger, entry: Entry, field: str) -> _Source:
    if field == "output":
        if entry.kind != Kind.TOOL_RESULT:
            raise EvidenceError(f"{entry.id} is a {entry.kind}; field 'output' needs a tool result")
        digest = entry.body_hash
        if digest is not None and ledger.blob_size(digest) >= MIN_BYTES:
            # A large output is paged through its index (`paged.py`); the body's blob key is
            # the sha256 of its exact bytes, the digest EvidenceRead reports.
            return _Source.of(entry, field, paged_text(ledger, digest), digest)
        body = ledger.body(entry) or b""
        return _Source.of(entry, field, Utf16Text.of(evidence_text(body)), digest_bytes(body))
    if field == "text":
        text = _message_text(entry)
    elif field == "arguments":
        text = json.dumps(_call_arguments(ledger, entry), indent=2, sort_keys=True)
    elif field == "media":
        text = _media_text(entry)
    else:
        raise EvidenceError(f"unknown field {field!r}; use one of {', '.join(FIELDS)}")
    data = text.encode("utf-8", errors="surrogatepass")
    return _Source.of(entry, field, Utf16Text.of(text), digest_bytes(data))


def _by_ordinal(ledger: Ledger, session_id: str, ordinal: int) -> Entry:
    """The session's `ordinal`-th tool result (`E17`: see `evidence_names`)."""
    count = 0
    for entry in ledger.entries(session_id):
        if entry.kind == Kind.TOOL_RESULT:
            count += 1
            if count == ordinal:
                return entry
    raise EvidenceError(
        f"no evidence E{ordinal}: this session has {count} tool output(s), E1 to E{count}"
    )


def resolve_entry(ledger: Ledger, session_id: str, ref: str) -> Entry:
    """The entry `ref` names, if this session may read it.

    Raises:
        EvidenceError: no such entry.
        EvidenceAccessError: it belongs to a session that is neither this one nor a direct child.
    """
    ordinal = ORDINAL.match(ref.strip())
    if ordinal is not None:
        return _by_ordinal(ledger, session_id, int(ordinal.group(1)))
    try:
        entry = ledger.entry(ref.strip())
    except UnknownEntryError as exc:
        raise EvidenceError(f"no evidence {ref!r} in this ledger") from exc
    if entry.session_id == session_id:
        return entry
    if ledger.session(entry.session_id).parent_id == session_id:
        return entry
    if _inherited(ledger, session_id, entry):
        return entry
    raise EvidenceAccessError(
        f"{ref} belongs to session {entry.session_id}, which is neither this session, one of"
        " its direct children, nor a session it was forked from (before the fork point); its"
        " evidence cannot be read from here"
    )


def _inherited(ledger: Ledger, session_id: str, entry: Entry) -> bool:
    """Whether `entry` is part of this fork's history: an ancestor's, before the fork point."""
    info = ledger.session(session_id)
    limit: int | None = None
    while info.fork_of is not None and info.fork_seq is not None:
        limit = info.fork_seq if limit is None else min(limit, info.fork_seq)
        if entry.session_id == info.fork_of:
            return entry.seq <= limit
        info = ledger.session(info.fork_of)
    return False


def _search_paged(
    text: PagedText, pattern: str, start_unit: int
) -> tuple[list[SearchHit], int | None]:
    """A literal search over a paged output, hit for hit what the whole-text search finds."""
    found, more = text.find(pattern, start_unit, MAX_HITS)
    length = utf16_len(pattern)
    return [SearchHit(h.offset, length, h.line, h.snippet) for h in found], more


def _search(
    source: _Source, pattern: str, regex: bool, start_unit: int
) -> tuple[list[SearchHit], int | None]:
    paged = source.text
    if isinstance(paged, PagedText):
        if not regex and utf16_len(pattern) <= MAX_NEEDLE_UNITS:
            return _search_paged(paged, pattern, start_unit)
        # A regex (or a very long needle) needs the whole text.
        source = replace(source, text=Utf16Text.of(paged.whole_text()))
    text = source.text
    assert isinstance(text, Utf16Text)
    start = text.index_of_unit(start_unit)
    if regex:
        try:
            compiled = re.compile(pattern, re.MULTILINE)
        except re.error as exc:
            raise EvidenceError(f"invalid regex {pattern!r}: {exc}") from exc
    else:
        compiled = re.compile(re.escape(pattern))
    hits: list[SearchHit] = []
    line = text.text.count("\n", 0, start) + 1
    scanned = start
    for match in compiled.finditer(text.text, start):
        if match.end() == match.start():
            continue
        if len(hits) == MAX_HITS:
            return hits, text.unit_of_index(match.start())
        line += text.text.count("\n", scanned, match.start())
        scanned = match.start()
        snippet = snippet_of(text.text, match.start(), at_text_start=True)
        offset = text.unit_of_index(match.start())
        length = text.unit_of_index(match.end()) - offset
        hits.append(SearchHit(offset, length, line, snippet))
    return hits, None


def read_evidence(
    ledger: Ledger,
    session_id: str,
    ref: str,
    *,
    field: str = "output",
    offset: int = 0,
    limit: int = PAGE_UNITS,
    search: str | None = None,
    regex: bool = False,
    expected_digest: str | None = None,
    cache: dict[tuple[str, str], _Source] | None = None,
) -> EvidencePage:
    """Read one page of evidence, or search it.

    Args:
        ledger: the ledger.
        session_id: the reading session (its own and its direct children's evidence only).
        ref: the entry id (`evt_…`), or `index`: every tool result of the session, oldest
            first, one line each (id, tool, main argument, size, exit, digest).
        field: `output`, `text`, `arguments` or `media`.
        offset: start, in UTF-16 code units (moved back off the middle of a surrogate pair).
        limit: page length in UTF-16 units, at most 8,000.
        search: a literal (or, with `regex`, a Python regular expression) to find from `offset`.
        regex: treat `search` as a regular expression.
        expected_digest: the digest the caller expects; a mismatch is an error.
        cache: keeps the last evidence read, so paging through it decodes it once.

    Raises:
        EvidenceError: unknown ref or field, a bad range or regex.
        EvidenceAccessError: the ref belongs to an unrelated session.
        DigestMismatchError: `expected_digest` differs from the stored evidence's digest.
    """
    if offset < 0:
        raise EvidenceError(f"offset must be ≥ 0, got {offset}")
    if limit <= 0:
        raise EvidenceError(f"limit must be ≥ 1, got {limit}")
    limit = min(limit, PAGE_UNITS)
    if ref.strip() == INDEX_REF:
        # The index grows with the session: rebuilt on every read, never cached.
        text = index_text(ledger, session_id)
        digest = digest_bytes(text.encode("utf-8", errors="surrogatepass"))
        source = _Source(INDEX_REF, session_id, "index", field, Utf16Text.of(text), digest)
    else:
        entry = resolve_entry(ledger, session_id, ref)
        key = (entry.id, field)
        cached = cache.get(key) if cache is not None else None
        source = cached or _load(ledger, entry, field)
        if cache is not None and cached is None:
            # One large evidence at a time is what paging needs; keep memory bounded.
            cache.clear()
            cache[key] = source
    if expected_digest is not None and expected_digest != source.digest:
        raise DigestMismatchError(
            f"{source.ref} {field} has digest {source.digest}, not the expected {expected_digest}"
        )
    total = source.text.units
    if offset > total:
        raise EvidenceError(f"offset {offset:,} is past the end ({total:,} UTF-16 units)")
    base: JSONObject = {"ref": source.ref}
    if field != "output":
        base["field"] = field
    if search is not None:
        if not search:
            raise EvidenceError("search must not be empty")
        hits, more_at = _search(source, search, regex, offset)
        following: JSONObject | None = None
        if more_at is not None:
            following = {**base, "search": search, "offset": more_at}
            if regex:
                following["regex"] = True
        return EvidencePage(
            source.ref, field, source.session_id, source.kind, source.digest, total, offset, 0,
            "", tuple(hits), search, following,
        )  # fmt: skip
    page, start, end = source.text.slice(offset, offset + limit)
    page_next: JSONObject | None = None
    if end < total:
        page_next = {**base, "offset": end}
        if limit != PAGE_UNITS:
            page_next["limit"] = limit
    return EvidencePage(
        source.ref, field, source.session_id, source.kind, source.digest, total, start,
        end - start, page, next_call=page_next,
    )  # fmt: skip


def render_page(page: JSONObject) -> str:
    """The text the model sees for an EvidenceRead answer."""
    total = page.get("total_units")
    head = f"[evidence {page.get('ref')} · {page.get('field')} · {page.get('digest')}"
    next_call = page.get("next_call")
    follow = (
        f"[next: EvidenceRead {json.dumps(next_call, sort_keys=True)}]"
        if isinstance(next_call, dict)
        else "[end]"
    )
    if "search" in page:
        hits = page.get("hits")
        rows = hits if isinstance(hits, list) else []
        lines = [f"{head} · search {json.dumps(page.get('search'))} · {len(rows)} hit(s)]"]
        for hit in rows:
            if isinstance(hit, dict):
                lines.append(
                    f"unit {hit.get('offset')} · line {hit.get('line')}: {hit.get('snippet')}"
                )
        if not rows:
            lines.append("(no match)")
        lines.append(follow if isinstance(next_call, dict) else "[no more hits]")
        return "\n".join(lines)
    offset = page.get("offset")
    length = page.get("length")
    end = offset + length if isinstance(offset, int) and isinstance(length, int) else None
    lines = [f"{head} · units {offset}–{end} of {total}]", str(page.get("text") or ""), follow]
    return "\n".join(lines)


class LedgerEvidenceReader:
    """The `EvidenceReader` the EvidenceRead tool is given: one ledger, one reading session."""

    def __init__(self, ledger: Ledger, session_id: str) -> None:
        self.ledger = ledger
        self.session_id = session_id
        self._cache: dict[tuple[str, str], _Source] = {}

    def read(self, arguments: JSONObject) -> JSONObject:
        """Answer one EvidenceRead call (arguments as the model sent them).

        Raises:
            EvidenceError: bad arguments, unknown ref, refused access or a digest mismatch.
        """
        ref = arguments.get("ref")
        if not isinstance(ref, str) or not ref:
            raise EvidenceError("ref is required: the evt_… id or E-ordinal shown in a reference")
        page = read_evidence(
            self.ledger,
            self.session_id,
            ref,
            field=_opt_str(arguments, "field") or "output",
            offset=_opt_int(arguments, "offset", 0),
            limit=_opt_int(arguments, "limit", PAGE_UNITS),
            search=_opt_str(arguments, "search"),
            regex=arguments.get("regex") is True,
            expected_digest=_opt_str(arguments, "expected_digest"),
            cache=self._cache,
        )
        return page.to_json()

    def render(self, arguments: JSONObject) -> str:
        """The model-facing text of one call."""
        return render_page(self.read(arguments))


def _opt_str(arguments: JSONObject, key: str) -> str | None:
    value = arguments.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise EvidenceError(f"{key} must be a string")
    return value


def _opt_int(arguments: JSONObject, key: str, default: int) -> int:
    value = arguments.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise EvidenceError(f"{key} must be an integer")
    return value
