"""Read in bounded memory: a 1 GiB file (sparse: it takes no disk) is read by the Read tool in
a fresh process whose peak memory is measured, and the streamed reading gives exactly the
lines a whole-text reading gives, whatever the chunk boundaries."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from comal.tools._read_stream import numbered_lines

GIB = 1 << 30

PROBE = """
import asyncio, json, os, resource, sys
from pathlib import Path
from comal.config import PermissionsConfig
from comal.tools.base import ToolContext
from comal.tools.files import ReadTool
from comal.tools.permissions import PermissionPolicy

workspace = Path(sys.argv[1])
ctx = ToolContext(workspace, PermissionPolicy(PermissionsConfig(), workspace), {})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
outcome = asyncio.run(ReadTool().run(json.loads(sys.argv[2]), ctx, None))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"grew_kib": after - before, "output": outcome.output.decode()}))
"""


def read_in_a_process(workspace: Path, arguments: dict[str, object]) -> tuple[int, str]:
    """Peak-memory growth (KiB) of a fresh process reading, and the Read output."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(workspace), json.dumps(arguments)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    found = json.loads(proc.stdout)
    return int(found["grew_kib"]), str(found["output"])


@pytest.mark.slow  # decodes 1 GiB: seconds, so with the slow suite (.ci/run runs it)
def test_a_one_gib_file_is_read_in_a_few_mib(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with big.open("wb") as handle:
        handle.write(b"".join(b"line %d\n" % n for n in range(1, 3001)))
        handle.truncate(GIB)  # the rest: one sparse line of NUL characters, 1 GiB long

    grew, output = read_in_a_process(tmp_path, {"path": "big.log", "offset": 2999})

    assert grew < 64 * 1024, f"reading grew the process by {grew} KiB"
    tail = GIB - len(b"".join(b"line %d\n" % n for n in range(1, 3001)))
    assert output == (
        "  2999\tline 2999\n"
        "  3000\tline 3000\n"
        f"  3001\t{chr(0) * 2000}… [line cut: {tail - 2000} more characters]\n"
        "[lines 2999-3001 of 3001]"
    )


@pytest.mark.slow  # hashes 1 GiB
def test_a_one_gib_binary_file_is_described_in_a_few_mib(tmp_path: Path) -> None:
    with (tmp_path / "disk.img").open("wb") as handle:
        handle.truncate(GIB)
    zeros = hashlib.sha256()
    for _ in range(GIB // (1 << 20)):
        zeros.update(bytes(1 << 20))

    grew, output = read_in_a_process(tmp_path, {"path": "disk.img"})

    assert grew < 64 * 1024, f"reading grew the process by {grew} KiB"
    assert output == f"[binary file: disk.img, {GIB} bytes, sha256:{zeros.hexdigest()}; not shown]"


def reference(data: bytes, first: int, limit: int, max_chars: int) -> tuple[str, int, bool]:
    """The whole-text reading the stream must equal."""
    try:
        text, valid = data.decode("utf-8"), True
    except UnicodeDecodeError:
        text, valid = data.decode("utf-8", "replace"), False
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    out = []
    for number, line in enumerate(lines[first - 1 : first - 1 + limit], start=first):
        line = line.removesuffix("\r")
        if len(line) > max_chars:
            line = f"{line[:max_chars]}… [line cut: {len(line) - max_chars} more characters]"
        out.append(f"{number:>6}\t{line}")
    return "\n".join(out), len(lines), valid


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"a", b"bc", b"\n", b"\r\n", b"\r", "é".encode(), "€".encode(),
                         b"\xff", b"\xe2\x82", b"0123456789"]),
        min_size=1,
        max_size=60,
    ).map(b"".join),
    first=st.integers(1, 12),
    limit=st.integers(1, 6),
    max_chars=st.integers(1, 12),
    chunk=st.integers(1, 9),
)  # fmt: skip
def test_streamed_lines_equal_the_whole_text_reading(
    tmp_path_factory: object, data: bytes, first: int, limit: int, max_chars: int, chunk: int
) -> None:
    path = Path(str(tmp_path_factory.mktemp("r"))) / "f"  # type: ignore[attr-defined]
    path.write_bytes(data)
    found = numbered_lines(path, first, limit, max_chars, chunk_bytes=chunk)
    assert (found.body, found.total, found.valid_utf8) == reference(data, first, limit, max_chars)
