"""`comal doctor`'s ledger checks: reached, schema, and on PostgreSQL the role's rights and the
append-only triggers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid

import psycopg

from comal.ledger import Ledger
from comal.ledger.engine import is_pg_url
from comal.ledger.health import LedgerCheck, check_ledger
from comal.ledger.pg_schema import WRITER_ROLE
from tests.pg_support import fresh_schema, raw_conn, server_url


def _by_what(checks: list[LedgerCheck]) -> dict[str, LedgerCheck]:
    return {check.what: check for check in checks}


def test_a_ledger_not_yet_written_is_reported_as_such(ledger_target: str) -> None:
    checks = _by_what(check_ledger(ledger_target))
    assert all(check.ok for check in checks.values())
    if is_pg_url(ledger_target):
        assert checks["schema"].status == "empty: created by the first command that writes"
    else:
        assert checks["connection"].status.endswith(": not created yet")


def test_an_opened_ledger_checks_and_a_disabled_guard_does_not(ledger_target: str) -> None:
    Ledger.open(ledger_target).close()
    checks = _by_what(check_ledger(ledger_target))
    assert checks["schema"] == LedgerCheck(True, "schema", "4 of 4 migrations")
    if not is_pg_url(ledger_target):
        assert set(checks) == {"connection", "schema"}
        return
    assert checks["rights"].ok
    assert checks["rights"].fix == "run agents as a member of comal_writer"
    assert checks["append-only"] == LedgerCheck(True, "append-only", "triggers on entries enabled")
    with raw_conn(ledger_target) as conn:
        conn.execute("ALTER TABLE entries DISABLE TRIGGER entries_append_only")
    broken = _by_what(check_ledger(ledger_target))["append-only"]
    assert not broken.ok
    assert broken.status == "triggers missing or disabled: entries_append_only"


def test_a_writer_role_member_is_reported_with_insert_and_select_only() -> None:
    base = server_url()
    member = "m_" + uuid.uuid4().hex[:12]
    with fresh_schema(base) as url:
        Ledger.open(url).close()
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"CREATE ROLE {member} LOGIN IN ROLE {WRITER_ROLE}")
        try:
            member_url = re.sub(r"://[^@/]*@", f"://{member}@", url)
            rights = _by_what(check_ledger(member_url))["rights"]
            assert rights == LedgerCheck(True, "rights", f"role {member}: INSERT and SELECT only")
        finally:
            with psycopg.connect(base, autocommit=True) as admin:
                admin.execute(f"DROP OWNED BY {member}")
                admin.execute(f"DROP ROLE {member}")


def test_an_unreachable_server_is_a_failed_check_and_doctor_exits_3() -> None:
    url = "postgresql://comal@127.0.0.1:9/comal"
    (check,) = check_ledger(url)
    assert not check.ok
    assert check.what == "connection"
    assert check.status.startswith("postgresql://comal@127.0.0.1:9/comal: connection")
    done = subprocess.run(
        [sys.executable, "-m", "comal", "doctor", "--json"],
        env={**os.environ, "COMAL_LEDGER_URL": url},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert [c["what"] for c in report["ledger"]] == ["connection"]
