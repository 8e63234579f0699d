"""Peak memory of storing and paging one 50 MB tool output, in a fresh process.

Run: `.venv/bin/python -m perf.evidence_memory [--mb 50] [--via ledger|bash]`.

- `--via ledger` (the default): the process measures its own resident set before the output
  exists, then builds the output (the bytes a tool returns: held once), records it as a
  `tool.result` body in a fresh ledger, and reads the first page, a page in the middle and a
  literal search through `EvidenceRead`.
- `--via bash`: a real session — a scripted model, the real Bash tool, the context engine —
  first runs a small warm-up turn (so the tokenizer and engine are loaded), measures its
  resident set, then runs a turn whose Bash call prints the output (`yes … | head -c`), which
  the tool captures, the ledger stores with its page index and the engine previews for the
  next model call (the turn's wall time is printed too); then the same three `EvidenceRead`s.

Both print the peak resident set (Linux `ru_maxrss`) above that start, against the output's
size. The target is ≤ 2 × the size.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from pathlib import Path

from comal.agent.core.session import SessionOptions, open_session
from comal.agent.turns import run_session
from comal.config import load_config
from comal.evidence.read import read_evidence
from comal.ledger.store import Ledger
from comal.messages import ToolCallPart
from comal.providers.base import Capabilities
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.testing.sessions import SessionBuilder
from comal.tools.native import default_tools
from comal.tools.shell import BashTool

LINE = "2026-01-01T00:00:00Z INFO worker ok ünïcödé item processed successfully"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _page_through(ledger: Ledger, session_id: str, ref: str, size: int) -> None:
    for kwargs in ({}, {"offset": size // 2}, {"search": "needle"}):
        read_evidence(ledger, session_id, ref, **kwargs)


def via_ledger(directory: Path, mb: int) -> tuple[int, float, float, float]:
    """(size, start, stored, paged) with the output recorded straight into the ledger."""
    ledger = Ledger.open(directory / "memory.db", durable=True)
    builder = SessionBuilder(ledger)
    builder.user("dump")
    start = _rss_mb()
    line = (LINE + "\n").encode()
    # Built in one allocation: the output exists once, as a tool's returned bytes do.
    body = line * (mb * 1024 * 1024 // len(line))
    size = len(body)
    (result,) = builder.turn("", [("Bash", {"command": "cat huge.log"}, body, 0)])
    stored = _rss_mb()
    del body
    _page_through(ledger, builder.session_id, result.id, size)
    paged = _rss_mb()
    ledger.close()
    return size, start, stored, paged


async def via_bash(directory: Path, mb: int) -> tuple[int, float, float, float]:
    """(size, start, stored, paged) with the output printed by a real Bash call in a session."""
    workspace = directory / "ws"
    workspace.mkdir()
    env = {"COMAL_HOME": str(directory / "home"), "XDG_CONFIG_HOME": str(directory / "xdg")}
    config = load_config(env=env, cwd=workspace)
    size = mb * 1024 * 1024
    warm = ToolCallPart("call_1", "Bash", {"command": "echo warm"})
    big = ToolCallPart("call_2", "Bash", {"command": f"yes '{LINE}' | head -c {size}"})
    provider = ScriptedProvider(
        [ScriptedTurn(tool_calls=(warm,)), "warm", ScriptedTurn(tool_calls=(big,)), "done"],
        capabilities=Capabilities(128_000, 8_192, "fallback"),
    )
    tools = [t for t in default_tools() if t.spec.name != "Bash"]
    tools.append(BashTool(output_limit_bytes=2 * size))
    ledger = Ledger.open(config.ledger_path)
    session = open_session(ledger, config, provider, tools, SessionOptions())
    await run_session(session, "warm up")
    start = _rss_mb()
    began = time.perf_counter()
    await run_session(session, "dump it")
    print(f"(the turn with the {mb} MB output took {time.perf_counter() - began:.1f} s)")
    stored = _rss_mb()
    result = ledger.entries(session.id, kinds=("tool.result",))[-1]
    assert result.payload.get("size_bytes") == size
    _page_through(ledger, session.id, result.id, size)
    paged = _rss_mb()
    ledger.close()
    return size, start, stored, paged


def main() -> None:
    """Measure and print one Markdown row."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--via", choices=("ledger", "bash"), default="ledger")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.via == "bash":
            size, start, stored, paged = asyncio.run(via_bash(Path(tmp), args.mb))
            what = "Bash output in a session (captured, stored, previewed)"
        else:
            size, start, stored, paged = via_ledger(Path(tmp), args.mb)
            what = "tool output stored"
    mb = size / 1024 / 1024
    print(
        f"| {mb:.0f} MB {what} and paged, peak RSS above start | stored"
        f" {stored - start:.0f} MB · paged {paged - start:.0f} MB ({(paged - start) / mb:.1f} ×"
        " the output) |"
    )


if __name__ == "__main__":
    main()
