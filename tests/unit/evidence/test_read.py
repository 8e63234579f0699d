"""EvidenceRead: paging in UTF-16 units, search, digests, access, the tool and the CLI."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path

import pytest

from comal.cli import cmd_checkpoints, cmd_compact, cmd_context, cmd_evidence
from comal.config import load_config
from comal.errors import ComalError, DigestMismatchError, EvidenceAccessError, EvidenceError
from comal.evidence.read import PAGE_UNITS, LedgerEvidenceReader, read_evidence
from comal.ledger.store import Ledger
from comal.messages import JSONObject, digest_bytes
from comal.session import Utf16Text
from comal.testing.sessions import SessionBuilder
from comal.tools.evidence import EvidenceReadTool
from tests.unit.context.conftest import listing


def main(argv: list[str]) -> int:
    """The context commands' parsers and error handling, as `comal.cli.main` wires them."""
    parser = argparse.ArgumentParser(prog="comal")
    sub = parser.add_subparsers()
    for module in (cmd_context, cmd_compact, cmd_checkpoints, cmd_evidence):
        module.register(sub)
    args = parser.parse_args(argv)
    try:
        return int(asyncio.run(args.func(args)))
    except ComalError as exc:
        return exc.exit_code


def _result(builder: SessionBuilder, output: str | bytes) -> str:
    builder.user("go")
    return builder.turn("", [("Bash", {"command": "cat log"}, output, 0)])[0].id


def test_pages_cover_the_text_exactly_and_next_call_chains(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    text = "".join(f"{i:06d} some log line\n" for i in range(3_000))
    ref = _result(builder, text)
    pieces = []
    call: dict[str, object] | None = {"ref": ref}
    while call is not None:
        page = LedgerEvidenceReader(ledger, builder.session_id).read(call)  # type: ignore[arg-type]
        assert page["length"] <= PAGE_UNITS  # type: ignore[operator]
        pieces.append(page["text"])
        call = page["next_call"]  # type: ignore[assignment]
    assert "".join(pieces) == text  # type: ignore[arg-type]
    assert len(pieces) == -(-len(text) // PAGE_UNITS)


def test_surrogate_pairs_are_never_split(ledger: Ledger, builder: SessionBuilder) -> None:
    text = "a" + "😀" * 5000  # each emoji is 2 UTF-16 units
    ref = _result(builder, text)
    page = read_evidence(ledger, builder.session_id, ref, offset=0, limit=4)
    assert page.text == "a😀"
    assert page.length == 3
    assert page.next_call == {"ref": ref, "offset": 3, "limit": 4}
    inside = read_evidence(ledger, builder.session_id, ref, offset=2, limit=2)
    assert inside.offset == 1
    assert inside.text == "😀"
    assert page.total_units == 1 + 2 * 5000


def test_search_literal_and_regex_with_next_hits(ledger: Ledger, builder: SessionBuilder) -> None:
    lines = [f"test_{i} {'FAILED' if i % 7 == 0 else 'passed'}" for i in range(300)]
    text = "é\n" + "\n".join(lines)
    ref = _result(builder, text)
    page = read_evidence(ledger, builder.session_id, ref, search="FAILED")
    assert len(page.hits) == 20
    first = page.hits[0]
    assert first.line == 2
    assert first.snippet == "test_0 FAILED"
    assert text[first.offset : first.offset + first.length] == "FAILED"  # BMP-only: units = chars
    assert page.next_call is not None
    assert page.next_call["search"] == "FAILED"
    snippets = [h.snippet for h in page.hits]
    reader = LedgerEvidenceReader(ledger, builder.session_id)
    following: JSONObject | None = page.next_call
    while following is not None:
        answer = reader.read(following)
        hits = answer["hits"]
        assert isinstance(hits, list)
        snippets += [str(h["snippet"]) for h in hits if isinstance(h, dict)]
        nxt = answer["next_call"]
        following = nxt if isinstance(nxt, dict) else None
    assert snippets == [x for x in lines if "FAILED" in x]
    regex = read_evidence(ledger, builder.session_id, ref, search=r"^test_1\d FAILED$", regex=True)
    assert [h.snippet for h in regex.hits] == ["test_14 FAILED"]
    with pytest.raises(EvidenceError, match="invalid regex"):
        read_evidence(ledger, builder.session_id, ref, search="(", regex=True)


def test_digest_mismatch_is_an_error(ledger: Ledger, builder: SessionBuilder) -> None:
    ref = _result(builder, b"exact bytes \xff\xfe")
    good = digest_bytes(b"exact bytes \xff\xfe")
    page = read_evidence(ledger, builder.session_id, ref, expected_digest=good)
    assert page.digest == good
    assert page.text == "exact bytes \ufffd\ufffd"
    with pytest.raises(DigestMismatchError):
        read_evidence(ledger, builder.session_id, ref, expected_digest=digest_bytes(b"other"))


def test_only_own_and_direct_children_evidence(ledger: Ledger, builder: SessionBuilder) -> None:
    child = SessionBuilder(ledger, parent_id=builder.session_id)
    grandchild = SessionBuilder(ledger, parent_id=child.session_id)
    stranger = SessionBuilder(ledger)
    refs = {
        name: _result(b, f"from {name}")
        for name, b in (("child", child), ("grandchild", grandchild), ("stranger", stranger))
    }
    assert read_evidence(ledger, builder.session_id, refs["child"]).text == "from child"
    for name in ("grandchild", "stranger"):
        with pytest.raises(EvidenceAccessError):
            read_evidence(ledger, builder.session_id, refs[name])
    with pytest.raises(EvidenceAccessError):
        read_evidence(ledger, child.session_id, _result(builder, "parent's"))


def test_other_fields_and_bad_arguments(ledger: Ledger, builder: SessionBuilder) -> None:
    user = builder.user("a long request " * 10)
    (result,) = builder.turn("", [("Bash", {"command": "ls -la"}, "x", 0)])
    assert read_evidence(ledger, builder.session_id, user.id, field="text").text.startswith(
        "a long"
    )
    args = read_evidence(ledger, builder.session_id, result.id, field="arguments").text
    assert json.loads(args) == {"command": "ls -la"}
    with pytest.raises(EvidenceError, match="field 'output'"):
        read_evidence(ledger, builder.session_id, user.id)
    with pytest.raises(EvidenceError, match="no evidence"):
        read_evidence(ledger, builder.session_id, "evt_nope")
    with pytest.raises(EvidenceError, match="past the end"):
        read_evidence(ledger, builder.session_id, result.id, offset=5)


async def test_tool_returns_page_or_error_result(
    ledger: Ledger, builder: SessionBuilder, tmp_path: Path
) -> None:
    ref = _result(builder, "hello evidence")
    tool = EvidenceReadTool(LedgerEvidenceReader(ledger, builder.session_id))
    assert tool.read_only
    assert tool.spec.name == "EvidenceRead"
    ok = await tool.run({"ref": ref}, None, None)  # type: ignore[arg-type]
    assert not ok.is_error
    assert b"hello evidence" in ok.output
    assert b"[end]" in ok.output
    bad = await tool.run({"ref": ref, "expected_digest": "sha256:00"}, None, None)  # type: ignore[arg-type]
    assert bad.is_error
    assert b"DIGEST_MISMATCH" in bad.output


def test_cli_evidence_context_checkpoints(capsys: pytest.CaptureFixture[str]) -> None:
    path = load_config().ledger_path
    path.parent.mkdir(parents=True, exist_ok=True)
    with Ledger.open(path) as ledger:
        builder = SessionBuilder(ledger)
        ref = _result(builder, "line one\nline two\n")
        # More history than a checkpoint's verbatim tail holds, so `compact` makes it smaller.
        for i in range(8):
            builder.turn("", [("Read", {"path": f"src/m{i}.py"}, listing(f"m{i}", 100), None)])
        sid = builder.session_id
    assert main(["evidence", sid[:13], ref, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == "line one\nline two\n"
    assert main(["context", sid, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["session"] == sid
    assert report["window"]["tokens"] == 32_768
    assert {r["name"] for r in report["rows"]} >= {
        "System prompt",
        "Native tools",
        "Conversation",
        "Free space",
    }
    assert report["used"]["measured"] is False
    assert report["used"]["tokens"] > 0
    assert main(["compact", sid]) == 0
    assert "checkpoint 1" in capsys.readouterr().out
    assert main(["checkpoints", sid]) == 0
    assert capsys.readouterr().out.startswith("  1  ")
    assert main(["checkpoints", sid, "1"]) == 0
    assert capsys.readouterr().out.startswith("[checkpoint 1")
    assert main(["checkpoints", sid, "7"]) == 3  # an unknown checkpoint: a ledger error


def test_the_index_lists_every_result_oldest_first_and_pages_like_any_evidence(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    builder.user("go")
    refs = [
        builder.turn("", [("Bash", {"command": f"make step{i}"}, f"out {i}\n", i % 2)])[0].id
        for i in range(40)
    ]
    page = read_evidence(ledger, builder.session_id, "index", limit=600)
    text = page.text
    assert page.ref == "index"
    assert page.next_call == {"ref": "index", "offset": page.offset + page.length, "limit": 600}
    pieces = [text]
    following: JSONObject | None = page.next_call
    while following is not None:
        offset = following["offset"]
        assert isinstance(offset, int)
        page = read_evidence(ledger, builder.session_id, "index", offset=offset, limit=600)
        pieces.append(page.text)
        following = page.next_call
    lines = "".join(pieces).splitlines()
    assert [line.split(" · ")[0].split(". ")[1] for line in lines] == refs
    assert "Bash make step7 · 6 bytes · exit 1" in lines[7]
    hits = read_evidence(ledger, builder.session_id, "index", search="make step39").hits
    assert len(hits) == 1
    assert hits[0].line == 40


def test_the_index_is_reachable_through_the_tool_and_printed_in_checkpoints(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    from comal.context.relief.evidence_names import INDEX_CALL
    from tests.unit.context.conftest import listing, make_engine

    builder.user("Fix the build.")
    ref = builder.turn("", [("Bash", {"command": "make"}, "error: missing x\n", 2)])[0].id
    for i in range(8):  # more than the checkpoint's verbatim tail can hold
        builder.turn("", [("Read", {"path": f"src/m{i}.py"}, listing(f"m{i}", 100), None)])
    engine = make_engine(ledger, builder.session_id)
    checkpoint = engine.compact(by="user")
    assert INDEX_CALL in checkpoint.text
    call = json.loads(INDEX_CALL.removeprefix("EvidenceRead "))
    answer = LedgerEvidenceReader(ledger, builder.session_id).render(call)
    assert f"1. {ref} · Bash make · " in answer
    other = SessionBuilder(ledger)
    other.user("elsewhere")
    # Another session's index lists only its own results.
    assert ref not in read_evidence(ledger, other.session_id, "index").text


def test_an_ordinal_reads_the_same_evidence_as_its_full_id(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    first = _result(builder, "first output\n")
    second = builder.turn("", [("Bash", {"command": "ls"}, "second output\n" * 2_000, 0)])[0].id
    by_ordinal = read_evidence(ledger, builder.session_id, "E2", offset=0, limit=100)
    by_id = read_evidence(ledger, builder.session_id, second, offset=0, limit=100)
    assert by_ordinal.text == by_id.text == ("second output\n" * 8)[:100]
    assert by_ordinal.digest == by_id.digest
    assert read_evidence(ledger, builder.session_id, "E1").text == "first output\n"
    page = LedgerEvidenceReader(ledger, builder.session_id).read({"ref": "E2", "limit": 50})
    assert page["next_call"] is not None
    # Past the last output: a clear error that says how many there are.
    with pytest.raises(EvidenceError, match="E1 to E2"):
        read_evidence(ledger, builder.session_id, "E3")
    assert first != second


def test_a_large_output_pages_and_searches_exactly_as_its_whole_text(
    ledger: Ledger, builder: SessionBuilder
) -> None:
    # Over a megabyte, with multi-byte characters and surrogate pairs: paged by its index.
    line = "ok 😀 ünï line {i}\n"
    text = "".join(line.format(i=i) for i in range(80_000)) + "FATAL 😀 needle at the end\n"
    ref = _result(builder, text)
    whole = Utf16Text.of(text)
    for offset in (0, 1, 7, 65_535, 65_536, 1_000_003, whole.units - 5):
        page = read_evidence(ledger, builder.session_id, ref, offset=offset)
        expected, start, end = whole.slice(offset, offset + PAGE_UNITS)
        assert (page.text, page.offset, page.offset + page.length) == (expected, start, end)
        assert page.total_units == whole.units
    assert read_evidence(ledger, builder.session_id, ref).digest == digest_bytes(text.encode())
    # A literal search finds what the whole-text search finds: offsets, lines, snippets, next.
    for needle, start in (("line 7999", 0), ("😀 ünï line 4", 500_000), ("FATAL", 0), ("zz", 0)):
        paged = read_evidence(ledger, builder.session_id, ref, search=needle, offset=start)
        escaped = re.escape(needle)
        reference = read_evidence(
            ledger, builder.session_id, ref, search=escaped, regex=True, offset=start
        )
        assert paged.hits == reference.hits
        assert (paged.next_call or {}).get("offset") == (reference.next_call or {}).get("offset")
