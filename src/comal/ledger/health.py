"""What `comal doctor` checks of the ledger: it can be reached, its schema is this Comal's, and
(on PostgreSQL) the connecting role's rights and the append-only triggers are as they should be.

Checks only read: nothing is created or migrated (a ledger that does not exist yet is reported
as such, and is created by the first command that writes).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from comal.ledger.engine import is_pg_url, redact, sqlite_path
from comal.ledger.schema import MIGRATIONS

_KNOWN = [m.__name__ for m in MIGRATIONS]


@dataclass(frozen=True, slots=True)
class LedgerCheck:
    """One line of the ledger's part of the report."""

    ok: bool
    what: str
    """`connection`, `schema`, `rights` or `append-only`."""
    status: str
    fix: str = ""


def _schema(applied: set[str]) -> LedgerCheck:
    unknown = sorted(applied - set(_KNOWN))
    if unknown:
        return LedgerCheck(
            False, "schema", f"newer than this Comal ({', '.join(unknown)})", "upgrade Comal"
        )
    missing = [name for name in _KNOWN if name not in applied]
    if not applied:
        return LedgerCheck(True, "schema", "empty: created by the first command that writes")
    if missing:
        return LedgerCheck(
            True,
            "schema",
            f"{len(applied)} of {len(_KNOWN)} migrations; the next writer applies"
            f" {', '.join(missing)}",
        )
    return LedgerCheck(True, "schema", f"{len(_KNOWN)} of {len(_KNOWN)} migrations")


def check_ledger(target: str | Path) -> list[LedgerCheck]:
    """The checks of the ledger `target` names (a file or a PostgreSQL URL)."""
    if is_pg_url(target):
        return _check_pg(str(target))
    return _check_sqlite(sqlite_path(target))


def _check_sqlite(path: Path) -> list[LedgerCheck]:
    if not path.exists():
        return [LedgerCheck(True, "connection", f"{path}: not created yet")]
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            names = {str(r[0]) for r in conn.execute("SELECT name FROM migrations")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return [LedgerCheck(False, "connection", f"{path}: {exc}", "comal verify")]
    return [
        LedgerCheck(True, "connection", f"{path} (SQLite {sqlite3.sqlite_version})"),
        _schema(names),
    ]


def _may(raw: Any, right: str) -> bool:
    """Whether the connected role has `right` on `entries`."""
    row = raw.execute("SELECT has_table_privilege('entries', %s)", (right,)).fetchone()
    return bool(row and row[0])


def _check_pg(url: str) -> list[LedgerCheck]:
    import psycopg  # only where PostgreSQL is used

    where = redact(url)
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=5, application_name="comal")
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())
        return [LedgerCheck(False, "connection", f"{where}: {reason}", "is the server up?")]
    with raw:
        version = raw.execute("SHOW server_version").fetchone()
        user = raw.execute("SELECT current_user, current_schema()").fetchone()
        assert version is not None
        assert user is not None
        checks = [
            LedgerCheck(
                True,
                "connection",
                f"{where} (PostgreSQL {version[0]}, role {user[0]}, schema {user[1]})",
            )
        ]
        exists = raw.execute("SELECT to_regclass('migrations') IS NOT NULL").fetchone()
        if not (exists and exists[0]):
            return [*checks, _schema(set())]
        names = {str(r[0]) for r in raw.execute("SELECT name FROM migrations")}
        checks.append(_schema(names))
        rights = {right: _may(raw, right) for right in ("SELECT", "INSERT", "UPDATE", "DELETE")}
        if not (rights["SELECT"] and rights["INSERT"]):
            checks.append(
                LedgerCheck(
                    False,
                    "rights",
                    f"role {user[0]} cannot append (SELECT, INSERT on entries)",
                    "GRANT comal_writer TO the role",
                )
            )
        elif rights["UPDATE"] or rights["DELETE"]:
            checks.append(
                LedgerCheck(
                    True,
                    "rights",
                    f"role {user[0]} may also UPDATE/DELETE entries (only the triggers guard them)",
                    "run agents as a member of comal_writer",
                )
            )
        else:
            checks.append(LedgerCheck(True, "rights", f"role {user[0]}: INSERT and SELECT only"))
        enabled = {
            str(r[0])
            for r in raw.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'entries'::regclass"
                " AND tgenabled <> 'D'"
            )
        }
        guards = {"entries_append_only", "entries_no_truncate"}
        if guards <= enabled:
            checks.append(LedgerCheck(True, "append-only", "triggers on entries enabled"))
        else:
            checks.append(
                LedgerCheck(
                    False,
                    "append-only",
                    f"triggers missing or disabled: {', '.join(sorted(guards - enabled))}",
                    "ALTER TABLE entries ENABLE TRIGGER ALL, then comal verify",
                )
            )
    return checks
