"""MCP tool naming, descriptions, schemas and result conversion (no server needed)."""

from __future__ import annotations

import re

from mcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from comal.messages import JSONObject, MediaPart
from comal.testing.mcp_server import PNG_1X1
from comal.tools._mcp_client import describe_error, outcome_from_result
from comal.tools.mcp import (
    MAX_DESCRIPTION_CHARS,
    MAX_TOOL_NAME,
    input_schema,
    mcp_tool_name,
    tool_description,
)

WIRE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_plain_names_are_prefixed_with_the_server() -> None:
    assert mcp_tool_name("github", "create_issue") == "mcp__github__create_issue"


def test_names_are_made_valid_for_every_wire_and_stay_distinct() -> None:
    dotted = mcp_tool_name("fs", "read.file")
    spaced = mcp_tool_name("fs", "read file")
    assert WIRE_NAME.fullmatch(dotted)
    assert WIRE_NAME.fullmatch(spaced)
    assert dotted.startswith("mcp__fs__read_file_")
    # Both clean to `read_file`; the digest of the original keeps them apart.
    assert dotted != spaced
    assert mcp_tool_name("fs", "read.file") == dotted


def test_long_and_taken_names_get_a_stable_digest() -> None:
    long_name = "x" * 100
    name = mcp_tool_name("server", long_name)
    assert len(name) == MAX_TOOL_NAME
    assert WIRE_NAME.fullmatch(name)
    assert name == mcp_tool_name("server", long_name)
    first = mcp_tool_name("s", "tool")
    second = mcp_tool_name("s", "tool", taken={first})
    assert second != first
    assert second.startswith("mcp__s__tool_")


def test_descriptions_are_kept_or_cut_with_a_marker() -> None:
    assert tool_description("s", "t", "  Adds numbers.  ", None) == "Adds numbers."
    assert tool_description("s", "t", None, "Adder") == "Adder"
    assert tool_description("s", "t", "", None) == "Tool 't' of the MCP server 's'."
    long_text = "word " * 2_000
    cut = tool_description("s", "t", long_text, None)
    assert len(cut) <= MAX_DESCRIPTION_CHARS
    assert cut.endswith("[…description cut]")
    assert cut.startswith("word word")


def test_input_schema_is_an_object_schema() -> None:
    assert input_schema(None) == {"type": "object", "properties": {}}
    given: JSONObject = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
    }
    assert input_schema(given) == given
    assert input_schema({"properties": {}}) == {"type": "object", "properties": {}}


def test_text_blocks_are_joined_and_errors_flagged() -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text="one"), TextContent(type="text", text="two")],
        is_error=True,
    )
    outcome = outcome_from_result(result)
    assert outcome.output == b"one\ntwo"
    assert outcome.is_error
    assert outcome.status == "error"


def test_structured_content_is_canonical_json_only_without_text() -> None:
    only = CallToolResult(content=[], structured_content={"b": [1, 2], "a": "é"})
    assert outcome_from_result(only).output == b'{"a":"\\u00e9","b":[1,2]}'
    both = CallToolResult(
        content=[TextContent(type="text", text="42")], structured_content={"result": 42}
    )
    assert outcome_from_result(both).output == b"42"


def test_images_become_media_and_other_blocks_are_described() -> None:
    result = CallToolResult(
        content=[
            ImageContent(type="image", data=PNG_1X1, mime_type="image/png"),
            AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
            ResourceLink(type="resource_link", uri="file:///b.txt", name="b"),
        ]
    )
    outcome = outcome_from_result(result)
    assert outcome.media == (MediaPart("image/png", PNG_1X1),)
    assert outcome.output.decode().splitlines() == [
        "[audio audio/wav: 4 base64 chars not shown]",
        "inside",
        "[resource link: file:///b.txt b]",
    ]
    assert not outcome.is_error


def test_errors_inside_groups_are_described_by_their_cause() -> None:
    group = BaseExceptionGroup("outer", [ExceptionGroup("inner", [OSError("pipe closed")])])
    assert describe_error(group) == "OSError: pipe closed"
