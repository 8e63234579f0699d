"""What the attack tests share: a `comal -p` run whose scripted model makes the attacker's
calls, the whole recorded session read back, and the processes still alive on the host."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from comal.messages import canonical_json
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import Run, comal, configure, ledger_at


@dataclass(frozen=True)
class Attack:
    """A finished run: the CLI's exit, each call's recorded result, all the ledger holds."""

    run: Run
    results: list[dict[str, Any]]
    recorded: bytes
    """Every payload and body of the session, as stored: what must never hold a key."""


Turn = str | Mapping[str, Any]


def calls(*steps: tuple[str, dict[str, Any]]) -> list[Turn]:
    """Scripted turns: one call per turn, then a final answer."""
    turns: list[Turn] = [
        {"tool_calls": [{"id": f"c{n}", "name": name, "arguments": args}]}
        for n, (name, args) in enumerate(steps, start=1)
    ]
    return [*turns, "Done."]


def attack(
    workspace: Path,
    home: Path,
    turns: Sequence[Turn],
    *args: str,
    config: str = "",
    extra_env: Mapping[str, str] | None = None,
    before_run: Any = None,
) -> Attack:
    """Run `comal -p` in `workspace` with the scripted `turns`; read the session back."""
    workspace.mkdir(parents=True, exist_ok=True)
    with FakeServer(list(turns)) as server:
        configure(workspace, server, "openai-chat")
        with (workspace / ".comal" / "config.toml").open("a") as fh:
            fh.write(config)
        if before_run is not None:
            before_run()
        run = comal(
            "-p",
            "go",
            "--output-format",
            "stream-json",
            *args,
            cwd=workspace,
            env_home=home,
            timeout=180,
            extra_env=extra_env,
        )
    results: list[dict[str, Any]] = []
    recorded = bytearray()
    with ledger_at(home) as ledger:
        info = ledger.sessions()[-1]
        for entry in ledger.entries(info.id):
            body = ledger.body(entry) or b""
            recorded += canonical_json(entry.payload).encode() + b"\n" + body + b"\n"
            if entry.kind == "tool.result":
                results.append({**entry.payload, "output": body.decode("utf-8", "replace")})
    return Attack(run, results, bytes(recorded))


def processes_with(marker: str) -> list[int]:
    """Host processes with `marker` as one of their arguments (`sleep MARKER`; not the shells
    whose command text holds it), zombies left out."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline.split(b"\0") and state not in ("Z", "X"):
            found.append(int(proc.name))
    return found


def hook_settings(command: str) -> str:
    """A `.claude/settings.json` with one PreToolUse hook for every tool."""
    hook = {"matcher": "*", "hooks": [{"type": "command", "command": command}]}
    return json.dumps({"hooks": {"PreToolUse": [hook]}})
