"""Values read from the ledger: entries and session rows. Pure data, no I/O."""

from __future__ import annotations

from comal.messages import JSONObject
from comal.values import value


@value
class Entry:
    """One append-only ledger record.

    `payload` is the decoded canonical JSON. A payload may reference a blob as
    `{"blob": "sha256:<hex>", "size_bytes": n}` under the key `body`; read it with
    `Ledger.blob(hash)`.
    """

    seq: int
    id: str
    session_id: str
    kind: str
    payload: JSONObject
    content_hash: str
    created_at: int

    @property
    def body_hash(self) -> str | None:
        """Digest of the attached body blob, if any."""
        body = self.payload.get("body")
        if isinstance(body, dict):
            blob = body.get("blob")
            return blob if isinstance(blob, str) else None
        return None


@value
class SessionInfo:
    """A row of the sessions table, with counts derived from entries."""

    id: str
    parent_id: str | None
    created_at: int
    cwd: str
    model: str
    status: str
    title: str
    source: str
    entries: int
    last_activity_at: int
    fork_of: str | None = None
    """The session this one was forked from (its history continues the parent's), if any."""
    fork_seq: int | None = None
    """The last of the parent's entries (by seq) that the fork's history includes."""
