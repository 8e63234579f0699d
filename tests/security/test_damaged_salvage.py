"""Salvage of a ledger file damaged where SQL cannot reach its rows: the schema, a b-tree page.

Real ledgers written by `Ledger`, real damage written into the file, salvage through
`comal verify --salvage OUT`; every entry whose own page is intact must be kept.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from comal.ledger import Ledger
from comal.messages import JSONObject, message_to_json, user_text
from tests.e2e.headless_support import comal

pytestmark = pytest.mark.e2e

PAGE = 4096


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def recorded(home: Path, workspace: Path) -> tuple[str, list[str]]:
    """A session of 39 entries, every third one with a body blob; the file checkpointed."""
    home.mkdir(parents=True, exist_ok=True)
    with Ledger.open(home / "ledger.db") as ledger:
        sid = ledger.create_session(cwd=str(workspace), model="m")
        ids = []
        for n in range(39):
            payload: JSONObject = {"message": message_to_json(user_text(f"ask {n} " * 60))}
            body = f"output {n}\n".encode() * 50 if n % 3 == 0 else None
            ids.append(ledger.append(sid, "message.user", payload, body=body).id)
    conn = sqlite3.connect(home / "ledger.db")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sid, ids


def pages_of(db: Path) -> list[bytes]:
    data = db.read_bytes()
    return [data[i : i + PAGE] for i in range(0, len(data), PAGE)]


def write_page(db: Path, number: int, content: bytes) -> None:
    data = bytearray(db.read_bytes())
    data[(number - 1) * PAGE : number * PAGE] = content
    db.write_bytes(bytes(data))


def salvaged(home: Path, workspace: Path, out: Path, sid: str) -> list[str]:
    run = comal("verify", "--salvage", str(out), cwd=workspace, env_home=home)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code == 0, run.stdout + run.stderr
    with Ledger.open(out) as copy:
        assert copy.verify().ok
        return [e.id for e in copy.entries(sid)]


def test_a_flipped_bit_in_the_schema_keeps_every_entry(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    sid, ids = recorded(home, workspace)
    db = home / "ledger.db"
    first = bytearray(pages_of(db)[0])
    at = first.find(b"CREATE TABLE entries")
    assert at > 0
    first[at + 8] ^= 0x01  # TABLE -> TAAL: SQLite refuses the whole schema
    write_page(db, 1, bytes(first))
    broken = comal("sessions", cwd=workspace, env_home=home)
    assert broken.code == 3, broken.stderr  # the damage is real: SQL cannot read the file

    assert salvaged(home, workspace, tmp_path / "out.db", sid) == ids


def test_a_zeroed_interior_page_keeps_every_entry(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    sid, ids = recorded(home, workspace)
    db = home / "ledger.db"
    interior = [
        n
        for n, page in enumerate(pages_of(db), start=1)
        if n > 1 and page[0] == 0x05  # an interior table b-tree page
    ]
    assert interior, "39 entries of 1 KiB need more than one leaf"
    for number in interior:
        write_page(db, number, bytes(PAGE))

    assert salvaged(home, workspace, tmp_path / "out.db", sid) == ids


def test_a_zeroed_leaf_loses_only_its_own_entries(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    sid, ids = recorded(home, workspace)
    db = home / "ledger.db"
    pages = pages_of(db)
    # The table leaf holding entry 20 (not an index page), and every entry whose id is on it.
    number = next(n for n, p in enumerate(pages, start=1) if p[0] == 0x0D and ids[20].encode() in p)
    lost = {i for i in ids if i.encode() in pages[number - 1]}
    assert 0 < len(lost) < len(ids)
    write_page(db, number, bytes(PAGE))

    assert salvaged(home, workspace, tmp_path / "out.db", sid) == [i for i in ids if i not in lost]
