"""Small closed-loop coding tasks for Qwen2.5-Coder-0.5B-Instruct under a real llama-server.

`comal -p` runs each task against the server the conftest started (the model's own chat
template under `--jinja`, an 8,192-token window) with its output reserve capped at 160 tokens:
enough for the tasks' calls, while a reply that rambles (as this model does after an edit, for
thousands of tokens) ends in OUTPUT_LENGTH within a minute instead. The test then
checks the workspace itself: the file written, the check that passes, the number answered.

This model writes its tool calls as JSON text rather than in the wire's `tool_calls`; Comal
takes them as calls (`agent/text_calls.py`). A 0.5B model does not finish every task every
time, and its greedy replies differ between CPUs, so each test asserts that the task was done
*or* that Comal ended with a clear notice or error — never an `answered` run that did nothing
and said nothing. Writing a file, the first step of any closed loop, must succeed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.headless_support import comal
from tests.live.conftest import CODER_ID, LlamaServer

pytestmark = pytest.mark.live

CLEAR_NOTICES = frozenset({"TOOL_CALL_AS_TEXT", "EMPTY_REPLY"})
"""Notices that say the model's reply did nothing (text calls that could not run, no reply)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One task: the workspace's files before, the ask, and whether the workspace shows it
    done (given the workspace and the run's final answer)."""

    files: dict[str, str]
    ask: str
    done: Callable[[Path, str], bool]


def _check_passes(workspace: Path) -> bool:
    check = "from calc import add; assert add(2, 3) == 5"
    return (
        subprocess.run(
            [sys.executable, "-c", check], cwd=workspace, capture_output=True, check=False
        ).returncode
        == 0
    )


TASKS = {
    "write-a-file": Task(
        {},
        "Create a file named hello.txt containing exactly the text: hello world",
        lambda ws, _: (
            (ws / "hello.txt").exists() and (ws / "hello.txt").read_text().strip() == "hello world"
        ),
    ),
    "fix-a-one-line-bug": Task(
        {"calc.py": "def add(a, b):\n    return a - b\n"},
        'Use the Edit tool on calc.py to replace "a - b" with "a + b".',
        lambda ws, _: _check_passes(ws),
    ),
    "answer-a-number-from-a-file": Task(
        {"notes.txt": "The launch code is 4417.\n"},
        # The mention puts the file in the ask (read by Comal, recorded as a Read): asked to
        # read it with a tool, the model copies finish_call's description as its answer.
        "@notes.txt What is the launch code? Reply with the number only.",
        lambda _, answer: "4417" in answer,
    ),
}


def configure(workspace: Path, base_url: str) -> None:
    lines = [
        'default_provider = "llama"',
        "[providers.llama]",
        'wire = "openai-chat"',
        f'base_url = "{base_url}"',
        f'model = "{CODER_ID}"',
        "max_retries = 1",
    ]
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("name", list(TASKS))
def test_a_small_coder_model_does_the_task_or_comal_says_why_not(
    name: str,
    server_coder: LlamaServer,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    task = TASKS[name]
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    for path, text in task.files.items():
        (workspace / path).write_text(text)
    configure(workspace, server_coder.base_url)
    run = comal(
        "-p",
        task.ask,
        "--output-format",
        "json",
        "--max-turns",
        "4",
        "--max-output-tokens",
        "160",
        cwd=workspace,
        env_home=home,
        timeout=1_200,
    )
    # Whatever happened, the run ends with its report, never a traceback.
    assert "Traceback" not in run.stderr, run.stderr
    report = json.loads(run.stdout)
    answer = str(report.get("answer") or "")
    notices = [e["code"] for e in report["events"] if e["type"] == "notice"]
    done = task.done(workspace, answer)
    record_property("coder_task", f"{name}: {'done' if done else 'not done'}")
    if name == "write-a-file":
        assert done, json.dumps(report, indent=1)[-4_000:]
    if done:
        return
    # Not done: the run must say so — a failed status with its error (the turn limit, a reply
    # cut at the server's output limit), or a notice that the reply did nothing.
    failed = report["status"] == "failed" and run.code != 0 and bool(report["error"])
    assert failed or CLEAR_NOTICES & set(notices), json.dumps(report, indent=1)[-4_000:]
