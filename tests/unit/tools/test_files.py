"""Read, Write and Edit against real files: output, digests, atomicity and recovery."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from comal.errors import ToolError
from comal.messages import JSONObject, JSONValue, digest_bytes
from comal.tools.base import (
    ToolContext,
    ToolOutcome,
    ToolRegistry,
    render_outcome,
)
from comal.tools.edits import EditTool, WriteTool
from comal.tools.files import ReadTool
from comal.tools.native import default_tools
from tests.unit.tools.conftest import MakeContext

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(40))


async def read(ctx: ToolContext, **arguments: JSONValue) -> str:
    outcome = await ReadTool().run(dict(arguments), ctx, None)
    return outcome.output.decode()


# --- Read -------------------------------------------------------------------------------------


async def test_read_numbers_lines_and_pages(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert await read(ctx, path="a.txt", offset=3, limit=2) == (
        "     3\tline 3\n     4\tline 4\n[lines 3-4 of 10; continue with offset=5]"
    )
    whole = await read(ctx, path="a.txt")
    assert whole.splitlines()[0] == "     1\tline 1"
    assert whole.splitlines()[-1] == "    10\tline 10"
    assert "[lines" not in whole


async def test_read_counts_lines_like_grep(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "f.txt").write_bytes(b"one\r\ntwo\x0cstill two\nthree")
    assert await read(ctx, path="f.txt") == "     1\tone\n     2\ttwo\x0cstill two\n     3\tthree"


async def test_read_errors(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "d").mkdir()
    (workspace / "short.txt").write_text("x\n")
    missing = await ReadTool().run({"path": "nope.txt"}, ctx, None)
    assert missing.is_error
    assert missing.status == "error"
    assert b"no such file" in missing.output
    directory = await ReadTool().run({"path": "d"}, ctx, None)
    assert directory.is_error
    assert b"use Glob" in directory.output
    past = await ReadTool().run({"path": "short.txt", "offset": 5}, ctx, None)
    assert past.is_error
    assert b"past the end" in past.output


async def test_read_image_becomes_media(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "shot.png").write_bytes(PNG)
    outcome = await ReadTool().run({"path": "shot.png"}, ctx, None)
    assert not outcome.is_error
    assert len(outcome.media) == 1
    assert outcome.media[0].media_type == "image/png"
    assert base64.b64decode(outcome.media[0].data_b64) == PNG
    assert outcome.output.decode() == f"[image: shot.png, image/png, {len(PNG)} bytes]"


async def test_read_large_image_is_described_not_attached(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "big.png").write_bytes(PNG + bytes(100))
    outcome = await ReadTool(max_image_bytes=50).run({"path": "big.png"}, ctx, None)
    assert outcome.media == ()
    assert b"not attached" in outcome.output


async def test_read_binary_and_invalid_utf8(workspace: Path, ctx: ToolContext) -> None:
    blob = b"\x7fELF\x00\x01\x02" + bytes(range(256))
    (workspace / "prog").write_bytes(blob)
    text = await read(ctx, path="prog")
    assert text == f"[binary file: prog, {len(blob)} bytes, {digest_bytes(blob)}; not shown]"
    (workspace / "latin.txt").write_bytes(b"caf\xe9\n")
    latin = await read(ctx, path="latin.txt")
    assert (
        latin == "[file is not valid UTF-8; undecodable bytes shown as \ufffd]\n     1\tcaf\ufffd"
    )


async def test_read_cuts_long_lines(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "min.js").write_text("x" * 50 + "\n")
    outcome = await ReadTool(max_line_chars=10).run({"path": "min.js"}, ctx, None)
    assert outcome.output.decode() == "     1\txxxxxxxxxx… [line cut: 40 more characters]"


# --- Write ------------------------------------------------------------------------------------


async def test_write_prepares_without_touching_then_writes(
    workspace: Path, ctx: ToolContext
) -> None:
    target = workspace / "pkg" / "new.py"
    tool = WriteTool()
    args: JSONObject = {"path": "pkg/new.py", "content": "print('hi')\n"}
    prep = await tool.prepare(args, ctx)
    assert not target.exists()
    assert prep.digest_before is None
    assert prep.digest_intended == digest_bytes(b"print('hi')\n")
    assert prep.abs_path == str(target)
    assert prep.path == "pkg/new.py"
    outcome = await tool.run(args, ctx, prep)
    assert not outcome.is_error, outcome.output
    assert target.read_bytes() == b"print('hi')\n"
    assert [p.name for p in target.parent.iterdir()] == ["new.py"]


async def test_write_refuses_when_file_changed_since_preparation(
    workspace: Path, ctx: ToolContext
) -> None:
    target = workspace / "a.txt"
    target.write_text("v1")
    args: JSONObject = {"path": "a.txt", "content": "v2"}
    prep = await WriteTool().prepare(args, ctx)
    assert prep.digest_before == digest_bytes(b"v1")
    target.write_text("someone else")
    outcome = await WriteTool().run(args, ctx, prep)
    assert outcome.is_error
    assert b"file changed since preparation" in outcome.output
    assert target.read_text() == "someone else"


async def test_write_keeps_permission_bits(workspace: Path, ctx: ToolContext) -> None:
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o750)
    await WriteTool().run({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}, ctx, None)
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert script.read_text() == "#!/bin/sh\necho hi\n"


async def test_write_into_a_directory_is_an_error(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await WriteTool().prepare({"path": "d", "content": "x"}, ctx)


async def test_write_under_a_file_is_refused_and_a_fifo_is_never_waited_on(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "a.txt").write_text("x")
    arguments: JSONObject = {"path": "a.txt/b.txt", "content": "y"}
    outcome = await WriteTool().run(arguments, ctx, None)
    assert outcome.output.decode() == f"{workspace}/a.txt is a file, not a folder; nothing written"
    os.mkfifo(workspace / "pipe")
    with pytest.raises(ToolError, match="pipe is not a regular file"):
        await WriteTool().prepare({"path": "pipe", "content": "x"}, ctx)


# --- Edit -------------------------------------------------------------------------------------


async def test_edit_replaces_unique_match(workspace: Path, ctx: ToolContext) -> None:
    target = workspace / "m.py"
    target.write_text("def f():\n    return 1\n")
    args: JSONObject = {
        "path": "m.py",
        "edits": [{"old_string": "return 1", "new_string": "return 2"}],
    }
    prep = await EditTool().prepare(args, ctx)
    assert target.read_text() == "def f():\n    return 1\n"
    assert prep.digest_before == digest_bytes(b"def f():\n    return 1\n")
    assert prep.digest_intended == digest_bytes(b"def f():\n    return 2\n")
    outcome = await EditTool().run(args, ctx, prep)
    assert outcome.output.decode() == "Edited m.py: 1 edit(s), 1 replacement(s); 22 -> 22 bytes"
    assert target.read_text() == "def f():\n    return 2\n"


async def test_edit_rejects_ambiguous_and_missing_matches(
    workspace: Path, ctx: ToolContext
) -> None:
    (workspace / "m.py").write_text("x = 1\nx = 1\n")
    with pytest.raises(ToolError, match="occurs 2 times"):
        await EditTool().prepare(
            {"path": "m.py", "edits": [{"old_string": "x = 1", "new_string": "x = 2"}]}, ctx
        )
    with pytest.raises(ToolError, match="not found"):
        await EditTool().prepare(
            {"path": "m.py", "edits": [{"old_string": "y", "new_string": "z"}]}, ctx
        )
    with pytest.raises(ToolError, match="no such file"):
        await EditTool().prepare(
            {"path": "none.py", "edits": [{"old_string": "y", "new_string": "z"}]}, ctx
        )
    outcome = await EditTool().run(
        {"path": "m.py", "edits": [{"old_string": "x = 1", "new_string": "x = 2"}]}, ctx, None
    )
    assert outcome.is_error
    assert b"occurs 2 times" in outcome.output
    assert (workspace / "m.py").read_text() == "x = 1\nx = 1\n"


async def test_edit_replace_all(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "m.py").write_text("x = 1\nx = 1\n")
    edit: JSONObject = {"old_string": "x = 1", "new_string": "x = 2", "replace_all": True}
    outcome = await EditTool().run({"path": "m.py", "edits": [edit]}, ctx, None)
    assert b"2 replacement(s)" in outcome.output
    assert (workspace / "m.py").read_text() == "x = 2\nx = 2\n"


async def test_multi_edit_is_all_or_nothing(workspace: Path, ctx: ToolContext) -> None:
    original = "alpha\nbeta\ngamma\n"
    (workspace / "g.txt").write_text(original)
    failing: list[JSONValue] = [
        {"old_string": "alpha", "new_string": "ALPHA"},
        {"old_string": "beta", "new_string": "BETA"},
        {"old_string": "delta", "new_string": "DELTA"},
    ]
    outcome = await EditTool().run({"path": "g.txt", "edits": failing}, ctx, None)
    assert outcome.is_error
    assert b"edit 3 of 3: old_string not found" in outcome.output
    assert (workspace / "g.txt").read_text() == original
    # Edits apply in order: the second sees the first one's result.
    chained: list[JSONValue] = [
        {"old_string": "alpha", "new_string": "ALPHA"},
        {"old_string": "ALPHA\nbeta", "new_string": "ab"},
    ]
    done = await EditTool().run({"path": "g.txt", "edits": chained}, ctx, None)
    assert not done.is_error, done.output
    assert (workspace / "g.txt").read_text() == "ab\ngamma\n"


async def test_edit_preserves_undecodable_bytes(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "mixed.txt").write_bytes(b"caf\xe9 = 1\nrest\xff\n")
    edit: JSONObject = {"old_string": "= 1", "new_string": "= 2"}
    await EditTool().run({"path": "mixed.txt", "edits": [edit]}, ctx, None)
    assert (workspace / "mixed.txt").read_bytes() == b"caf\xe9 = 2\nrest\xff\n"


async def test_edit_rejects_identical_strings(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "m.py").write_text("a\n")
    with pytest.raises(ToolError, match="identical"):
        await EditTool().prepare(
            {"path": "m.py", "edits": [{"old_string": "a", "new_string": "a"}]}, ctx
        )


# --- recovery ---------------------------------------------------------------------------------


async def test_recovery_observes_intended_digest(workspace: Path, ctx: ToolContext) -> None:
    registry = ToolRegistry(default_tools())
    adapter = registry.recovery("Write")
    assert adapter is not None
    assert registry.recovery("Bash") is None
    assert registry.recovery("Read") is None
    args: JSONObject = {"path": "out.txt", "content": "done\n"}
    prep = await WriteTool().prepare(args, ctx)
    before = adapter.observe(prep, ctx)
    assert not before.matches_intended
    assert before.readable
    assert before.current_digest is None
    await WriteTool().run(args, ctx, prep)
    after = adapter.observe(prep, ctx)
    assert after.matches_intended
    assert after.current_digest == prep.digest_intended
    (workspace / "out.txt").write_text("other\n")
    other = adapter.observe(prep, ctx)
    assert not other.matches_intended
    assert other.current_digest == digest_bytes(b"other\n")


async def test_recovery_read_denied_by_current_permissions(
    workspace: Path, tmp_path: Path, make_ctx: MakeContext
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    full = make_ctx("full-access")
    prep = await WriteTool().prepare({"path": str(outside), "content": "y"}, full)
    await WriteTool().run({"path": str(outside), "content": "y"}, full, prep)
    assert EditTool().observe(prep, full).matches_intended
    restricted = make_ctx()
    seen = EditTool().observe(prep, restricted)
    assert not seen.readable
    assert not seen.matches_intended
    assert "outside the workspace" in seen.detail


def test_render_outcome_shows_exit_code() -> None:
    assert render_outcome(ToolOutcome(b"boom", exit_code=2)) == "boom\n[exit code: 2]"
    assert render_outcome(ToolOutcome(b"ok\n", exit_code=0)) == "ok\n"
    assert render_outcome(ToolOutcome(b"\xff")).startswith("[output is not valid UTF-8")
