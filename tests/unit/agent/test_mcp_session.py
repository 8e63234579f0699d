"""MCP tools inside a session: their budget row, the recorded catalog, calls and recovery.

A real `comal.testing.mcp_server` process serves the whole module; sessions run on a real
ledger with a scripted provider.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from comal.agent.core.events import AgentEvent, Notice
from comal.agent.core.loop import run_turn
from comal.agent.core.recovery import recover
from comal.agent.core.session import Session, SessionOptions, open_session
from comal.agent.core.tool_catalog import MCP_WARNING, TOOLS_KIND, recorded_mcp_specs
from comal.agent.core.toolset import standard_tools
from comal.cli.cmd_context import recorded_engine
from comal.config import Config, McpServerConfig
from comal.errors import LedgerError
from comal.ledger.store import Ledger
from comal.messages import (
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_to_json,
    user_text,
)
from comal.providers.scripted import ScriptedProvider, ScriptedTurn
from comal.tools.mcp import McpServerFailure, McpToolset, open_mcp_servers

pytestmark = pytest.mark.asyncio(loop_scope="module")

CALC = McpServerConfig("calc", command=sys.executable, args=("-m", "comal.testing.mcp_server"))
BROKEN = McpServerFailure("broken", "MCP server 'broken' is unavailable: FileNotFoundError")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-session-ws").resolve()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def calc(workspace: Path) -> AsyncIterator[McpToolset]:
    async with open_mcp_servers([CALC], env=dict(os.environ), cwd=workspace) as toolset:
        yield toolset


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(tmp_path / "home" / "ledger.db") as opened:
        yield opened


def config(workspace: Path, home: Path) -> Config:
    return Config(
        home=home,
        config_dir=home / "config",
        workspace=workspace,
        env=dict(os.environ),
        mcp_servers={"calc": CALC},
    )


def open_with_mcp(
    ledger: Ledger,
    workspace: Path,
    calc: McpToolset,
    provider: ScriptedProvider,
    events: list[AgentEvent],
    *,
    failures: tuple[McpServerFailure, ...] = (),
    session_id: str | None = None,
) -> Session:
    options = SessionOptions(max_turns=4, emit=events.append, mcp_failures=failures)
    return open_session(
        ledger,
        config(workspace, ledger.path.parent),
        provider,
        [*standard_tools(), *calc.tools],
        options,
        session_id=session_id,
        workspace=workspace,
    )


async def test_mcp_schemas_have_their_own_row_and_are_sent(
    ledger: Ledger, workspace: Path, calc: McpToolset
) -> None:
    events: list[AgentEvent] = []
    s = open_with_mcp(ledger, workspace, calc, ScriptedProvider([]), events, failures=(BROKEN,))
    mcp_names = [t.spec.name for t in calc.tools]
    fixed = s.engine.fixed
    assert [spec.name for spec in fixed.mcp_tools] == mcp_names
    assert not any(spec.name.startswith("mcp__") for spec in fixed.tools)
    offered = [spec.name for spec in s.engine.view().tools]
    assert offered[-len(mcp_names) :] == mcp_names
    assert "Bash" in offered
    rows = {row.name: row.tokens for row in s.engine.report().rows}
    assert rows["MCP tools"] > 0
    assert rows["Native tools"] > 0

    (catalog,) = ledger.entries(s.id, kinds=(TOOLS_KIND,))
    mcp = catalog.payload["mcp"]
    assert isinstance(mcp, list)
    assert [item["name"] for item in mcp if isinstance(item, dict)] == mcp_names
    assert {item["server"] for item in mcp if isinstance(item, dict)} == {"calc"}
    assert catalog.payload["failed"] == [{"server": "broken", "message": BROKEN.message}]
    assert recorded_mcp_specs(ledger, s.id) == fixed.mcp_tools
    warnings = [e.payload for e in ledger.entries(s.id, kinds=("warning",))]
    assert warnings == [{"code": MCP_WARNING, "message": BROKEN.message}]
    assert Notice(MCP_WARNING, BROKEN.message) in events

    # A recorded session's report counts the same MCP schemas without starting a server.
    recorded = recorded_engine(ledger, s.id, config(workspace, ledger.path.parent))
    recorded_rows = {row.name: row.tokens for row in recorded.report().rows}
    assert recorded_rows["MCP tools"] == rows["MCP tools"]


async def test_the_model_calls_an_mcp_tool_and_sees_its_result(
    ledger: Ledger, workspace: Path, calc: McpToolset
) -> None:
    add = ToolCallPart("call_1", "mcp__calc__add", {"a": 40, "b": 2})
    provider = ScriptedProvider([ScriptedTurn(tool_calls=(add,)), "The sum is 42."])
    s = open_with_mcp(ledger, workspace, calc, provider, [])
    answer = await run_turn(s, "add 40 and 2")
    assert answer == "The sum is 42."
    first, second = provider.requests
    assert "mcp__calc__add" in [spec.name for spec in first.tools]
    results = [
        part
        for message in second.messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    ]
    assert results == [ToolResultPart("call_1", "mcp__calc__add", "42")]
    (result,) = ledger.entries(s.id, kinds=("tool.result",))
    assert ledger.body(result) == b"42"


async def test_an_interrupted_mcp_call_recovers_as_uncertain_and_is_not_rerun(
    ledger: Ledger, workspace: Path, calc: McpToolset
) -> None:
    note = ToolCallPart("call_n", "mcp__calc__note", {"path": "effect.txt", "text": "once"})
    s = open_with_mcp(ledger, workspace, calc, ScriptedProvider([]), [])
    s.ledger.append(s.id, "message.user", {"message": message_to_json(user_text("note it"))})
    s.ledger.append(
        s.id,
        "message.assistant",
        {
            "message": message_to_json(Message("assistant", (TextPart(""), note))),
            "wire": "openai-chat",
            "model": "scripted-model",
            "finish": "tool_calls",
            "usage": {},
            "usage_raw": {},
            "request_entry": "",
        },
    )
    s.ledger.append(
        s.id,
        "tool.started",
        {
            "call_id": note.call_id,
            "name": note.name,
            "arguments": note.arguments,
            "permission": {"decision": "allow", "mode": "workspace-write", "reason": "test"},
        },
    )
    # The process dies here: no tool.result. A new process resumes the session.
    ledger.release_lock(s.id)
    resumed = open_with_mcp(ledger, workspace, calc, ScriptedProvider([]), [], session_id=s.id)

    report = await recover(resumed)

    assert [(c.name, c.status) for c in report.calls] == [("mcp__calc__note", "uncertain")]
    assert "no recovery adapter" in report.calls[0].detail
    assert not (workspace / "effect.txt").exists()
    assert report.held_uncertain == 1
    again = await resumed.runner.run(ToolCallPart("call_m", note.name, note.arguments))
    assert again.status == "denied"
    assert not (workspace / "effect.txt").exists()


async def test_sessions_without_mcp_servers_record_no_catalog(
    ledger: Ledger, workspace: Path
) -> None:
    home = ledger.path.parent
    plain = Config(home=home, config_dir=home / "config", workspace=workspace)
    s = open_session(ledger, plain, ScriptedProvider([]), standard_tools(), SessionOptions())
    assert ledger.entries(s.id, kinds=(TOOLS_KIND, "warning")) == []
    assert s.engine.fixed.mcp_tools == ()
    assert recorded_mcp_specs(ledger, s.id) == ()


async def test_a_malformed_recorded_catalog_is_a_ledger_error(
    ledger: Ledger, workspace: Path
) -> None:
    home = ledger.path.parent
    plain = Config(home=home, config_dir=home / "config", workspace=workspace)
    s = open_session(ledger, plain, ScriptedProvider([]), standard_tools(), SessionOptions())
    s.ledger.append(
        s.id, TOOLS_KIND, {"native": [], "mcp": [], "failed": [], "mcp_digest": ""}, body=b'{"a":1}'
    )
    with pytest.raises(LedgerError, match="catalog is not a list"):
        recorded_mcp_specs(ledger, s.id)
