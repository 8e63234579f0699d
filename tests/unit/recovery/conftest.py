"""Fixtures for recovery tests: a real workspace, a real ledger, and sessions opened on them.

A "crashed process" is reproduced by writing exactly the entries the agent writes before a
tool's result (`message.assistant`, then `tool.started` with the real preparation computed by
the real tool) and, when the crash came after the effect, performing the real effect.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest

from comal.agent.core.events import AgentEvent
from comal.agent.core.session import Session, SessionOptions, open_session
from comal.agent.core.toolset import standard_tools
from comal.config import Config, PermissionRule, PermissionsConfig
from comal.ledger.store import Ledger
from comal.messages import JSONObject, Message, TextPart, ToolCallPart, message_to_json
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.tools.base import ToolContext
from comal.tools.permissions import AskHook


@dataclass
class Bench:
    """A workspace, a ledger and the means to open sessions in it."""

    workspace: Path
    ledger: Ledger
    home: Path
    checks: tuple[str, ...] = ()
    rules: tuple[PermissionRule, ...] = ()
    mode: str = "workspace-write"
    events: list[AgentEvent] = field(default_factory=list)

    def config(self) -> Config:
        return Config(
            home=self.home,
            config_dir=self.home / "config",
            workspace=self.workspace,
            permissions=PermissionsConfig(mode=self.mode, rules=self.rules),
            checks=self.checks,
            env=dict(os.environ),
        )

    def open(
        self,
        turns: Sequence[object] = (),
        *,
        session_id: str | None = None,
        interactive: bool = False,
        ask: AskHook | None = None,
    ) -> tuple[Session, ScriptedProvider]:
        script = [t for t in turns if isinstance(t, ScriptedTurn | str)]
        assert len(script) == len(turns), "turns are ScriptedTurn or str"
        provider = ScriptedProvider(script)
        options = SessionOptions(
            max_turns=8, interactive=interactive, emit=self.events.append, ask=ask
        )
        session = open_session(
            self.ledger,
            self.config(),
            provider,
            standard_tools(),
            options,
            session_id=session_id,
            workspace=self.workspace,
        )
        return session, provider


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    with Ledger.open(home / "ledger.db") as ledger:
        yield Bench(workspace.resolve(), ledger, home)


def call(call_id: str, name: str, arguments: Mapping[str, object]) -> ToolCallPart:
    return ToolCallPart(call_id, name, cast("JSONObject", dict(arguments)))


def record_reply(s: Session, *calls: ToolCallPart, text: str = "") -> None:
    """Append an assistant message the way the loop does."""
    parts = ((TextPart(text),) if text else ()) + calls
    s.ledger.append(
        s.id,
        "message.assistant",
        {
            "message": message_to_json(Message("assistant", parts)),
            "wire": "openai-chat",
            "model": "scripted-model",
            "finish": "tool_calls" if calls else "stop",
            "usage": {
                "new_input": 100,
                "cache_read": 0,
                "cache_write": None,
                "output": 10,
                "reasoning": None,
            },
            "usage_raw": {},
            "request_entry": "",
        },
    )


async def record_started(
    s: Session, part: ToolCallPart, *, prepare: bool = True, effect: bool = False
) -> None:
    """Append `tool.started` as the runner does (with the real preparation), and optionally
    perform the real effect, leaving no result: the state a SIGKILL leaves behind."""
    tool = s.runner.registry.get(part.name)
    assert tool is not None
    ctx: ToolContext = s.runner.context
    preparation = await tool.prepare(part.arguments, ctx) if prepare else None
    payload: JSONObject = {
        "call_id": part.call_id,
        "name": part.name,
        "arguments": part.arguments,
        "permission": {"decision": "allow", "mode": "workspace-write", "reason": "test"},
    }
    if preparation is not None:
        payload["preparation"] = {
            "path": preparation.path,
            "abs_path": preparation.abs_path,
            "digest_before": preparation.digest_before,
            "digest_intended": preparation.digest_intended,
        }
    s.ledger.append(s.id, "tool.started", payload)
    if effect:
        await tool.run(part.arguments, ctx, preparation)


def results(s: Session) -> list[JSONObject]:
    return [e.payload for e in s.ledger.entries(s.id, kinds=("tool.result",))]


def result_text(s: Session, call_id: str) -> str:
    for entry in s.ledger.entries(s.id, kinds=("tool.result",)):
        if entry.payload.get("call_id") == call_id:
            body = s.ledger.body(entry)
            assert body is not None
            return body.decode()
    raise AssertionError(f"no result for {call_id}")
