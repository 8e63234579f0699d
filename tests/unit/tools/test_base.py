"""The registry, argument validation and path resolution shared by every tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from comal.errors import ToolError
from comal.messages import JSONObject, ToolSpec
from comal.tools.base import ToolRegistry, resolve_path, validate_arguments
from comal.tools.edits import EDIT_SPEC
from comal.tools.native import default_tools
from comal.tools.shell import BASH_SPEC, BashTool


def test_default_tools_in_stable_order() -> None:
    registry = ToolRegistry(default_tools())
    assert registry.names() == ("Read", "Write", "Edit", "Bash", "Glob", "Grep")
    assert [s.name for s in registry.specs()] == list(registry.names())
    assert registry.get("Bash") is not None
    assert registry.get("bash") is None
    read_only = {tool.spec.name: tool.read_only for tool in default_tools()}
    assert read_only == {
        "Read": True,
        "Write": False,
        "Edit": False,
        "Bash": False,
        "Glob": True,
        "Grep": True,
    }


def test_registry_refuses_duplicates() -> None:
    registry = ToolRegistry([BashTool()])
    with pytest.raises(ValueError, match="already registered"):
        registry.add(BashTool())


def test_every_spec_is_a_closed_object_schema() -> None:
    for spec in ToolRegistry(default_tools()).specs():
        assert spec.parameters["type"] == "object"
        assert spec.parameters["additionalProperties"] is False
        assert spec.description
        assert len(spec.description) < 600


@pytest.mark.parametrize(
    ("spec", "arguments", "problem"),
    [
        (BASH_SPEC, {}, "arguments.command is required"),
        (BASH_SPEC, {"command": 3}, "arguments.command must be a string"),
        (BASH_SPEC, {"command": "ls", "timeout_s": 601}, "arguments.timeout_s must be at most 600"),
        (BASH_SPEC, {"command": "ls", "timeout_s": True}, "arguments.timeout_s must be a number"),
        (BASH_SPEC, {"command": "ls", "cwd": "/"}, "arguments has unknown field(s): cwd"),
        (EDIT_SPEC, {"path": "a", "edits": []}, "arguments.edits must have at least 1 item(s)"),
        (
            EDIT_SPEC,
            {"path": "a", "edits": [{"old_string": "x"}]},
            "arguments.edits[0].new_string is required",
        ),
        (
            EDIT_SPEC,
            {"path": "a", "edits": [{"old_string": "x", "new_string": "y", "replace_all": 1}]},
            "arguments.edits[0].replace_all must be a boolean",
        ),
    ],
)
def test_validate_arguments_reports_the_first_problem(
    spec: ToolSpec, arguments: JSONObject, problem: str
) -> None:
    expected = f"invalid arguments for {spec.name}: {problem}"
    assert validate_arguments(spec, arguments) == expected


def test_validate_arguments_accepts_valid_calls_and_checks_enums() -> None:
    assert validate_arguments(BASH_SPEC, {"command": "ls", "timeout_s": 2.5}) is None
    grep = ToolRegistry(default_tools()).get("Grep")
    assert grep is not None
    assert validate_arguments(grep.spec, {"pattern": "x", "output_mode": "content"}) is None
    assert validate_arguments(grep.spec, {"pattern": "x", "output_mode": "count"}) == (
        "invalid arguments for Grep: arguments.output_mode must be one of "
        "'files_with_matches', 'content'"
    )


def test_resolve_path(tmp_path: Path) -> None:
    assert resolve_path(tmp_path, "a/../b") == tmp_path.resolve() / "b"
    assert resolve_path(tmp_path, "/etc") == Path("/etc")
    with pytest.raises(ToolError, match="invalid path"):
        resolve_path(tmp_path, "")
    with pytest.raises(ToolError, match="invalid path"):
        resolve_path(tmp_path, "a\x00b")
