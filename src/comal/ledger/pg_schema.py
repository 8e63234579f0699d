"""The ledger's schema on PostgreSQL: the same named migrations as SQLite's, in the same order.

Each step of `schema.MIGRATIONS` (a function run on SQLite) has its PostgreSQL text here under
the same name; `PG_MIGRATIONS` is built from the SQLite list, so a step added to one and not
the other fails at import. The `migrations` table records the names applied on both engines,
and the version gate is the same: a ledger that records a name this Comal does not know is
refused before anything is written.

Invariants (as on SQLite):
- `entries`, `blobs` and `blob_chunks` are append-only: triggers raise on every UPDATE,
  DELETE and TRUNCATE, whoever the user is; the role `comal_writer` (created when the
  connecting user may create roles) has INSERT and SELECT only on them, so a login role made a
  member of it cannot even try.
- A blob is one `blobs` row (its digest, size and chunk size) and its bytes in `blob_chunks`
  rows of `CHUNK_BYTES` (bytea, stored uncompressed so a range reads only its pages).
- Session ids compare bytewise (`COLLATE "C"`), as SQLite's text does: a prefix lookup is a
  range scan whatever the server's default collation.
- `sessions.rowid` is an identity column standing for SQLite's rowid: listings order ties by it.
"""

from __future__ import annotations

from comal.ledger.schema import MIGRATIONS

CHUNK_BYTES = 1 << 20
"""Bytes per `blob_chunks` row (the last chunk of a blob may be shorter)."""

WRITER_ROLE = "comal_writer"
"""The group role whose members may append but never change or remove an entry or blob."""

_M001 = """
CREATE TABLE sessions (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id TEXT COLLATE "C" PRIMARY KEY,
    parent_id TEXT COLLATE "C" REFERENCES sessions(id),
    cwd TEXT NOT NULL,
    model TEXT NOT NULL,
    title TEXT NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'finished', 'failed', 'interrupted')),
    created_at BIGINT NOT NULL,
    entry_count BIGINT NOT NULL DEFAULT 0,
    last_activity_at BIGINT NOT NULL,
    last_seq BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_parent ON sessions(parent_id);
CREATE INDEX sessions_by_cwd ON sessions(cwd, last_activity_at, last_seq);
CREATE TABLE entries (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT COLLATE "C" NOT NULL UNIQUE,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(id),
    kind TEXT COLLATE "C" NOT NULL,
    payload TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX entries_by_session ON entries(session_id, seq);
CREATE TABLE blobs (
    hash TEXT COLLATE "C" PRIMARY KEY,
    size_bytes BIGINT NOT NULL,
    chunk_bytes INTEGER NOT NULL
);
CREATE TABLE blob_chunks (
    hash TEXT COLLATE "C" NOT NULL REFERENCES blobs(hash),
    n INTEGER NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (hash, n)
);
ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE TABLE locks (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions(id),
    pid BIGINT NOT NULL,
    host TEXT NOT NULL,
    process_start_id TEXT NOT NULL,
    process_started_at BIGINT NOT NULL,
    acquired_at BIGINT NOT NULL
);
CREATE FUNCTION comal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger % are append-only', TG_TABLE_NAME;
END $$;
CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
    FOR EACH ROW EXECUTE FUNCTION comal_append_only();
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries
    FOR EACH STATEMENT EXECUTE FUNCTION comal_append_only();
CREATE TRIGGER blobs_append_only BEFORE UPDATE OR DELETE ON blobs
    FOR EACH ROW EXECUTE FUNCTION comal_append_only();
CREATE TRIGGER blobs_no_truncate BEFORE TRUNCATE ON blobs
    FOR EACH STATEMENT EXECUTE FUNCTION comal_append_only();
CREATE TRIGGER blob_chunks_append_only BEFORE UPDATE OR DELETE ON blob_chunks
    FOR EACH ROW EXECUTE FUNCTION comal_append_only();
CREATE TRIGGER blob_chunks_no_truncate BEFORE TRUNCATE ON blob_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION comal_append_only();
CREATE FUNCTION comal_entries_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions
       SET entry_count = entry_count + 1, last_activity_at = NEW.created_at,
           last_seq = NEW.seq
     WHERE id = NEW.session_id;
    RETURN NULL;
END $$;
CREATE TRIGGER entries_count AFTER INSERT ON entries
    FOR EACH ROW EXECUTE FUNCTION comal_entries_count();
"""

_M002 = """
ALTER TABLE sessions ADD COLUMN fork_of TEXT COLLATE "C" REFERENCES sessions(id);
ALTER TABLE sessions ADD COLUMN fork_seq BIGINT;
CREATE INDEX entries_by_kind ON entries(session_id, kind, seq);
"""

_M003 = """
CREATE TABLE blob_pages (
    hash TEXT COLLATE "C" PRIMARY KEY REFERENCES blobs(hash),
    format INTEGER NOT NULL,
    utf8 INTEGER NOT NULL,
    points BYTEA NOT NULL,
    checksum TEXT NOT NULL
);
"""

_M004 = """
ALTER TABLE locks ADD COLUMN host_id TEXT NOT NULL DEFAULT '';
ALTER TABLE locks ADD COLUMN expires_at BIGINT NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION comal_entries_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions
       SET entry_count = entry_count + 1, last_activity_at = NEW.created_at,
           last_seq = NEW.seq
     WHERE id = NEW.session_id;
    PERFORM pg_notify('comal_ledger', NEW.session_id);
    RETURN NULL;
END $$;
"""
"""Leases on the lock rows; and every append notifies `NOTIFY_CHANNEL` (delivered at commit,
once per session and transaction), so a fleet can be watched without polling."""

NOTIFY_CHANNEL = "comal_ledger"

_BY_NAME = {
    "m001_initial": _M001,
    "m002_forks": _M002,
    "m003_page_index": _M003,
    "m004_leases": _M004,
}

PG_MIGRATIONS: tuple[tuple[str, str], ...] = tuple(
    (step.__name__, _BY_NAME[step.__name__]) for step in MIGRATIONS
)
"""(name, PostgreSQL text) of every migration, in `schema.MIGRATIONS` order."""

if len(_BY_NAME) != len(PG_MIGRATIONS):  # a PostgreSQL step SQLite does not have
    raise RuntimeError(f"PostgreSQL migrations {sorted(_BY_NAME)} differ from SQLite's")

APPEND_ONLY_TABLES = ("entries", "blobs", "blob_chunks")
MUTABLE_TABLES = ("sessions", "locks", "blob_pages")

GRANTS = f"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{WRITER_ROLE}') THEN
        CREATE ROLE {WRITER_ROLE} NOLOGIN;
    END IF;
EXCEPTION WHEN insufficient_privilege OR duplicate_object OR unique_violation THEN
    NULL;
END $$;
DO $$
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO {WRITER_ROLE}', current_schema());
    GRANT SELECT, INSERT ON {", ".join(APPEND_ONLY_TABLES)} TO {WRITER_ROLE};
    GRANT SELECT, INSERT, UPDATE, DELETE ON {", ".join(MUTABLE_TABLES)} TO {WRITER_ROLE};
    GRANT SELECT ON migrations TO {WRITER_ROLE};
EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    NULL;
END $$;
"""
"""Creates the writer role when it may, and grants it its rights on this schema's tables
(run after every migration that changes tables; nothing when the role cannot exist)."""
