"""An output over the tool's limit is cut, and its receipt (`tool.result`) states both sizes."""

from __future__ import annotations

import os
from pathlib import Path

from comal.agent.core.tool_runner import ToolRunner
from comal.config import PermissionsConfig
from comal.messages import JSONObject, ToolCallPart
from comal.tools.base import ToolContext, ToolRegistry
from comal.tools.permissions import PermissionPolicy
from comal.tools.shell import OUTPUT_LIMIT_BYTES, BashTool


async def test_the_receipt_states_the_cut(workspace: Path) -> None:
    policy = PermissionPolicy(PermissionsConfig(mode="full-access"), workspace)
    ctx = ToolContext(workspace, policy, dict(os.environ))
    recorded: list[tuple[str, JSONObject]] = []
    runner = ToolRunner(
        ToolRegistry([BashTool(output_limit_bytes=1000)]),
        policy,
        ctx,
        lambda record, body: recorded.append((record.KIND, record.to_payload())),
    )
    command = "head -c 5000 /dev/zero | tr '\\0' 'a'"
    await runner.run(ToolCallPart("c1", "Bash", {"command": command}))
    ((_, result),) = [r for r in recorded if r[0] == "tool.result"]
    assert result["cut"] == {"limit_bytes": 1000, "total_bytes": 5000}
    await runner.run(ToolCallPart("c2", "Bash", {"command": "echo short"}))
    short = [p for kind, p in recorded if kind == "tool.result"][-1]
    assert "cut" not in short


def test_the_default_limit_is_32_mib() -> None:
    assert OUTPUT_LIMIT_BYTES == 32 * 1024 * 1024
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert "32 MiB" in readme
