"""The ledger's two engines for tests: SQLite in a temporary file, PostgreSQL in a fresh schema.

PostgreSQL is the server `COMAL_TEST_PG_URL` names (`.ci/run` starts a throwaway cluster on
loopback with `scripts/pg-cluster.sh` and exports it). Without it, a PostgreSQL test skips on
a developer's machine and fails under CI (`CI` set): a test CI would skip is not a test.
Each test gets its own schema (`search_path` in the URL's options), dropped afterwards.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from comal.ledger.conn import Conn
from comal.ledger.engine import is_pg_url, sqlite_path

ENGINES = ("sqlite", "postgresql")
"""The parameters of every test that runs on both engines."""


def server_url() -> str:
    """The test server's URL; skips (fails under CI) when there is none."""
    url = os.environ.get("COMAL_TEST_PG_URL", "")
    if url:
        return url
    if os.environ.get("CI"):
        pytest.fail("COMAL_TEST_PG_URL is unset under CI: .ci/run must start PostgreSQL")
    pytest.skip("no PostgreSQL server: set COMAL_TEST_PG_URL (scripts/pg-cluster.sh start DIR)")


CLUSTER = Path(__file__).parents[1] / "scripts" / "pg-cluster.sh"


def cluster_dir() -> str:
    """The test cluster's directory (`COMAL_TEST_PG_DIR`, to restart it); skips or fails as
    `server_url` does."""
    server_url()
    found = os.environ.get("COMAL_TEST_PG_DIR", "")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("COMAL_TEST_PG_DIR is unset under CI: .ci/run must export it")
    pytest.skip("no test cluster to restart: set COMAL_TEST_PG_DIR (scripts/pg-cluster.sh)")


def restart_cluster(directory: str, mode: str) -> None:
    """Restart the test server: `fast` (clients told, then cut) or `immediate` (as a crash)."""
    subprocess.run(["bash", str(CLUSTER), "restart", directory, mode], check=True)


def schema_url(url: str, schema: str) -> str:
    """`url` with its search_path set to `schema`."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{schema}"


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """A ledger URL of a schema of its own on the server at `url`, dropped afterwards."""
    schema = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema_url(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def ledger_target(engine: str, tmp_path: Path, name: str = "ledger.db") -> Iterator[str]:
    """Where a test's ledger lives on `engine`: a file under `tmp_path`, or a fresh schema."""
    if engine == "sqlite":
        yield str(tmp_path / "data" / name)
        return
    with fresh_schema(server_url()) as url:
        yield url


@contextmanager
def raw_conn(target: str | Path) -> Iterator[Conn]:
    """A plain connection to a ledger's tables, past the `Ledger` (to look at rows as stored)."""
    if is_pg_url(target):
        from comal.ledger.pg import PgConn

        pg_conn = PgConn(psycopg.connect(str(target), autocommit=True))
        try:
            yield pg_conn
        finally:
            pg_conn.close()
        return
    sqlite_conn = sqlite3.connect(sqlite_path(target), isolation_level=None)
    try:
        yield sqlite_conn
    finally:
        sqlite_conn.close()
