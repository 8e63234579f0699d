"""The closed `Record` union, the `Kind` enum and the one parser, `record_of`.

A ledger a newer Comal wrote may hold kinds this version does not name: they are stored and
read back as they are, and parse as None (skipped by every reader), never refused.
"""

from __future__ import annotations

import ast
import json
import typing
from pathlib import Path

import comal
from comal.ledger import Ledger
from comal.ledger.records import (
    RECORDS,
    ChildReceiptRecord,
    Kind,
    Record,
    UserMessage,
    WarningRecord,
    kind_of,
    record_of,
)
from comal.messages import message_to_json, user_text


def test_the_union_the_enum_and_the_table_name_the_same_kinds_in_the_same_order() -> None:
    members = typing.get_args(Record)
    assert members == tuple(RECORDS.values())
    assert [cls.KIND for cls in members] == list(Kind)
    assert all(type(cls.KIND) is Kind for cls in members)


def test_a_kind_member_is_stored_as_its_plain_string(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        sid = ledger.create_session(cwd="/w", model="m")
        written = ledger.append_record(sid, WarningRecord("CODE", "said"))
        by_string = ledger.append(sid, "warning", {"code": "CODE", "message": "said"})
        read = ledger.entries(sid)
    assert type(written.kind) is str
    assert written.content_hash == by_string.content_hash
    assert [(e.kind, e.payload) for e in read] == [
        ("warning", {"code": "CODE", "message": "said"}),
        ("warning", {"code": "CODE", "message": "said"}),
    ]
    assert json.dumps({"kind": Kind.WARNING}) == '{"kind": "warning"}'


def test_record_of_parses_every_kind_and_a_newer_kind_as_none(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        sid = ledger.create_session(cwd="/w", model="m")
        ledger.append_record(sid, UserMessage(message_to_json(user_text("hi"))))
        ledger.append(sid, "future.kind", {"what": "a newer Comal's entry"})
        ledger.append_record(sid, ChildReceiptRecord("call_1", "finished", "done", "", None, 1, ()))
        entries = ledger.entries(sid)
    assert [kind_of(e) for e in entries] == [Kind.MESSAGE_USER, None, Kind.CHILD_RECEIPT]
    assert [record_of(e) for e in entries] == [
        UserMessage(message_to_json(user_text("hi"))),
        None,
        ChildReceiptRecord("call_1", "finished", "done", "", None, 1, ()),
    ]
    assert entries[1].payload == {"what": "a newer Comal's entry"}


def _raw_appends(path: Path) -> list[str]:
    """The functions of a module that call an `append` with a kind and a payload."""
    found = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "append"
                and len(node.args) >= 2  # a list's append takes one
            ):
                found.append(fn.name)
    return found


def test_outside_the_ledger_comal_appends_records_only() -> None:
    src = Path(comal.__file__).parent
    ledger = src / "ledger"
    raw = {
        str(path.relative_to(src)): names
        for path in sorted(src.rglob("*.py"))
        if ledger not in path.parents and (names := _raw_appends(path))
    }
    # The session builder writes what Comal never writes (damaged, older or newer entries),
    # for the tests of the readers that tolerate them.
    assert raw == {"testing/sessions.py": ["append"]}
