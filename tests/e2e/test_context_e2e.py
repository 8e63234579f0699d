"""The context engine end to end: `comal -p` against a fake server that enforces its window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import Run, configure, ledger_at
from tests.e2e.headless_support import comal_here as comal

pytestmark = pytest.mark.e2e


def bash_turn(index: int, command: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"b{index}", "name": "Bash", "arguments": {"command": command}}]}


def entry_kinds(home: Path, session_id: str) -> list[str]:
    with ledger_at(home) as ledger:
        return [e.kind for e in ledger.entries(session_id)]


def run_within_window(
    workspace: Path, home: Path, turns: list[Any], window: int, wire: str, prompt: str, timeout: int
) -> Run:
    """`comal -p PROMPT` against a fake server refusing any request over `window`; the run
    succeeds with no overflow, no orphan call or result, and one request per scripted turn."""
    with FakeServer(turns, window=window) as server:
        configure(workspace, server, wire)
        run = comal(
            "-p",
            prompt,
            "--context-window",
            str(window),
            "--max-output-tokens",
            "1024",
            "--output-format",
            "stream-json",
            cwd=workspace,
            env_home=home,
            timeout=timeout,
        )
        assert run.code == 0, run.stderr + run.stdout[-2000:]
        stats = server.stats()
        assert stats.overflows == 0
        assert stats.orphan_violations == 0
        assert stats.requests == len(turns)
    return run


def go_natively(workspace: Path, home: Path, window: int, config: str) -> Run:
    """`comal -p go` with `config` added to the workspace's settings and sub-agents off, so the
    window is sized for the native tools' schemas alone."""
    with (workspace / ".comal" / "config.toml").open("a") as settings:
        settings.write(f"\n{config}[agents]\nenabled = false\n")
    return comal(
        "-p",
        "go",
        "--context-window",
        str(window),
        "--max-output-tokens",
        "1024",
        cwd=workspace,
        env_home=home,
        timeout=120,
    )


# A detailed task: a checkpoint must re-send it, a projection keeps it in the cached prefix, so
# with big outputs late in the prompt the cost model prefers a projection first.
TASK = "Inspect the numbers.\n" + "\n".join(
    f"- range {i}: check that every number from {i * 100_000} on is printed once, in order,"
    " and note the first and the last one you see."
    for i in range(1, 15)
)


def test_long_session_projects_then_derives_then_finishes(workspace: Path, home: Path) -> None:
    window = 20_000
    # Big outputs are ~9 KB: under the large-output threshold, so they enter verbatim and only
    # pressure can turn them into references. While the conversation is mostly big old outputs,
    # projecting them lands about where the deepest checkpoint would: stage 1 is enough. Then
    # small outputs pile up, which only a checkpoint takes back out of the way.
    big = [(i, f"seq {i * 100_000} {i * 100_000 + 1300}") for i in range(1, 7)]
    small = [(i, f"seq {i * 100_000} {i * 100_000 + 150}") for i in range(7, 40)]
    turns: list[Any] = [bash_turn(i, command) for i, command in big + small]
    turns.append("All outputs inspected.")
    run = run_within_window(workspace, home, turns, window, "openai-chat", TASK, timeout=120)
    kinds = entry_kinds(home, run.session_id())
    assert "projection" in kinds
    assert "checkpoint" in kinds
    assert kinds.index("projection") < kinds.index("checkpoint")
    actions = [e["action"] for e in run.events() if e["type"] == "context"]
    assert "projection" in actions
    assert "checkpoint" in actions
    shown = comal("checkpoints", run.session_id(), cwd=workspace, env_home=home)
    assert shown.code == 0
    assert "1" in shown.stdout
    verified = comal("verify", run.session_id(), cwd=workspace, env_home=home)
    assert verified.code == 0


def test_context_overhead_refuses_to_post(workspace: Path, home: Path) -> None:
    with FakeServer(["never sent"]) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "hi", "--context-window", "1500", cwd=workspace, env_home=home)
        assert server.stats().requests == 0
    assert run.code == 5
    assert "CONTEXT_OVERHEAD" in run.stderr
    assert "window" in run.stderr


def test_provider_context_length_is_recovered_once(workspace: Path, home: Path) -> None:
    # The server really holds fewer tokens than Comal was told: its first overflow error makes
    # Comal recalibrate and relieve pressure, and the retried request fits.
    turns: list[Any] = [bash_turn(i, f"seq {i * 10_000} {i * 10_000 + 700}") for i in range(1, 5)]
    turns.append("Done.")
    with FakeServer(turns, window=4_500, advertised_window=131_072) as server:
        configure(workspace, server, "openai-chat")
        run = go_natively(workspace, home, 12_000, "")
        assert run.code == 0, run.stderr
        assert server.stats().overflows >= 1
        assert server.stats().orphan_violations == 0
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        entries = ledger.entries(info.id)
        errors = [e.payload["code"] for e in entries if e.kind == "provider.error"]
        assert "CONTEXT_LENGTH" in errors
        assert any(e.kind == "context.calibrated" for e in entries)


def test_pressure_loop_stops_with_a_clear_error(workspace: Path, home: Path) -> None:
    # Custom instructions (never compacted) fill more than the automatic threshold (half the
    # usable room here) on their own: no derivation can get under it, so every call would
    # derive again. Comal must stop instead of deriving forever.
    rules = "\n".join(f"- rule {i}: keep module m{i} free of global state" for i in range(220))
    (workspace / "AGENTS.md").write_text(rules + "\n")
    turns: list[Any] = [bash_turn(i, f"seq {i} {i + 400}") for i in range(1, 8)]
    turns.append("unreachable")
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        run = go_natively(workspace, home, 9_000, "[context]\nthreshold_ratio = 0.5\n\n")
    assert run.code == 5, run.stderr
    assert "CONTEXT_PRESSURE_LOOP" in run.stderr
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        assert ledger.verify(info.id).ok
        assert info.status == "failed"
        derived = ledger.entries(info.id, kinds=("checkpoint",))
    assert 1 <= len(derived) <= 3


def test_prompt_truncation_by_the_server_is_recorded(workspace: Path, home: Path) -> None:
    turns: list[Any] = [bash_turn(1, "seq 1 3000"), {"text": "ok", "usage": {"input_tokens": 40}}]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        run = comal("-p", "count", cwd=workspace, env_home=home)
        assert run.code == 0, run.stderr
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        warnings = [e.payload for e in ledger.entries(info.id, kinds=("warning",))]
    assert any(w["code"] == "PROMPT_TRUNCATED" for w in warnings)


@pytest.mark.parametrize("window", [12_000, 24_000])
def test_a_long_mixed_session_never_overflows_the_servers_window(
    workspace: Path, home: Path, window: int
) -> None:
    # Small results, file-sized outputs and a few large logs, as agents produce them; the fake
    # server refuses any request over its window, so every event must land in time.
    commands = []
    for i in range(1, 46):
        lines = (3, 40, 3, 200, 3, 900)[i % 6]
        commands.append((i, f"seq {i * 10_000} {i * 10_000 + lines}"))
    turns: list[Any] = [bash_turn(i, command) for i, command in commands]
    turns.append("Everything inspected.")
    prompt = "Inspect every range and report."
    run = run_within_window(
        workspace, home, turns, window, "anthropic-messages", prompt, timeout=180
    )
    kinds = entry_kinds(home, run.session_id())
    assert "checkpoint" in kinds or "projection" in kinds
