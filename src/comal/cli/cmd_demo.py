"""`comal demo`: an offline, scripted run of the whole machine on a real sample project.

Real tools in a temporary copy of the sample project, a real ledger (the user's, so
`comal show ID` works afterwards), the real context engine with a deliberately small window so
its references and checkpoints are visible — and a scripted model, clearly labelled, instead of
a language model. It ends with the context report, the session state and the session id.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path

from comal.agent.core.session import SessionOptions
from comal.agent.core.toolset import standard_tools
from comal.agent.features.state import render_state, session_state
from comal.agent.turns import run_headless
from comal.cli.cmd_context import recorded_engine
from comal.cli.configuring import run_config
from comal.cli.demo_model import DemoModel
from comal.cli.demo_project import write_project
from comal.cli.render import Renderer
from comal.ledger.store import Ledger

DEMO_WINDOW = 8_000
"""Small on purpose: the sample task overflows it, so the context engine has to act."""

DEMO_OUTPUT_RESERVE = 2_048
"""The scripted model writes short replies; a small reserve leaves the window to the context."""

DEMO_TASK = (
    "The tests of this inventory project fail. Find the bug, fix it, make sure all tests "
    "pass, and tell me which item the stock report flags as low stock."
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `comal demo`."""
    parser = sub.add_parser(
        "demo", help="offline scripted demo on a sample project (no model or network needed)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    parser.add_argument(
        "--context-window", type=int, default=DEMO_WINDOW, help="the demo's (small) window"
    )
    parser.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
    parser.set_defaults(func=run_demo)


async def run_demo(args: argparse.Namespace) -> int:
    """Run the scripted task and print the context report and session state."""
    tmp = Path(tempfile.mkdtemp(prefix="comal-demo-"))
    workspace = tmp / "inventory"
    write_project(workspace)
    config = run_config(cwd=workspace)
    config = dataclasses.replace(
        config, permissions=dataclasses.replace(config.permissions, mode="workspace-write")
    )
    print(
        "comal demo — a SCRIPTED model (no language model, no network) drives real tools\n"
        f"workspace: {workspace} (a temporary copy of the sample project)\n"
        f"context window: {args.context_window:,} tokens (deliberately small)\n",
        file=sys.stderr,
    )
    # The demo is a show: its commentary and every step are the point.
    renderer = Renderer(args.output_format, verbose=True)
    options = SessionOptions(max_turns=20, max_output_tokens=DEMO_OUTPUT_RESERVE, emit=renderer)
    with Ledger.open(config.ledger) as ledger:
        outcome = await run_headless(
            ledger,
            config,
            DemoModel(args.context_window),
            standard_tools(),
            options,
            prompt=DEMO_TASK,
            # The scripted demo never delegates; its deliberately small window is for its plan.
            delegate=(),
        )
        if args.output_format == "text":
            print("\n", file=sys.stderr)
            print(recorded_engine(ledger, outcome.session_id, config).report().render())
            print()
            print(render_state(session_state(ledger, outcome.session_id)))
            print(f"\nsession: {outcome.session_id}  status: {outcome.status}")
            print(f"inspect it with: comal show {outcome.session_id}")
    renderer.finish(
        session_id=outcome.session_id,
        status=outcome.status,
        answer=outcome.answer,
        error=outcome.error,
    )
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if outcome.error is None else outcome.error.exit_code
