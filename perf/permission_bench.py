"""Bash permission and sandbox costs: judging a command line, and running one under bubblewrap.

Run: `.venv/bin/python -m perf.permission_bench [--lines N] [--runs N]`.
Figures go to stdout as a Markdown table: the time `PermissionPolicy.decide` takes for a Bash
line (tree-sitter parse plus rule matching, against the README's rules), and the wall time of
`BashTool.run("true")` unconfined (`full-access`) and under bubblewrap (`workspace-write`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from comal.config import PermissionRule, PermissionsConfig, SandboxConfig
from comal.tools.base import ToolContext
from comal.tools.permissions import PermissionPolicy
from comal.tools.sandbox import probe, session_sandbox
from comal.tools.shell import BashTool

LINES = (
    "pytest -q tests/unit",
    "cd src && git status --short | grep -v '^??' > changes.txt",
    "bash -c 'rm -rf build' && echo $(date) >> log.txt",
    "find . -name '*.pyc' -exec rm -f {} + ; ls | xargs wc -l",
    'for f in *.py; do python -m py_compile "$f" || exit 1; done',
)
RULES = (
    PermissionRule("deny", "Bash", "rm -rf *"),
    PermissionRule("ask", "Bash", "git push *"),
    PermissionRule("allow", "Bash", "pytest *"),
)


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.2f} ms (p90 {_p90(samples) * 1000:.2f})"


def _p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[int(len(ordered) * 0.9) - 1]


def bench_decide(workspace: Path, count: int) -> list[tuple[str, str]]:
    policy = PermissionPolicy(PermissionsConfig(rules=RULES), workspace)
    tool = BashTool()
    rows = []
    for line in LINES:
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            policy.decide(tool, {"command": line})
            samples.append(time.perf_counter() - start)
        verdict = policy.decide(tool, {"command": line}).decision
        shown = line.replace("|", "\\|")  # a Markdown table cell
        rows.append((f"decide `{shown}` → {verdict}", _ms(samples)))
    return rows


async def _run(ctx: ToolContext, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        outcome = await BashTool().run({"command": "true"}, ctx, None)
        samples.append(time.perf_counter() - start)
        assert outcome.exit_code == 0, outcome.output
    return samples


def bench_spawn(workspace: Path, count: int) -> list[tuple[str, str]]:
    rows = []
    for mode in ("full-access", "workspace-write"):
        policy = PermissionPolicy(PermissionsConfig(mode=mode), workspace)
        box = session_sandbox(mode, workspace, SandboxConfig())
        ctx = ToolContext(workspace, policy, dict(os.environ), sandbox=box)
        label = "unconfined" if box is None else "under bubblewrap"
        rows.append(
            (f"`BashTool.run('true')` {label} ({mode})", _ms(asyncio.run(_run(ctx, count))))
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=500, help="decisions per line")
    parser.add_argument("--runs", type=int, default=50, help="Bash runs per mode")
    args = parser.parse_args()
    reason = probe()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp).resolve()
        rows = bench_decide(workspace, args.lines)
        if reason is None:
            rows += bench_spawn(workspace, args.runs)
        else:
            rows.append(("sandbox", f"not measured: {reason}"))
    print("| measure | median |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
