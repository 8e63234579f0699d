"""Messages round-trip through their JSON exactly; a valid call serializes as it always has."""

from __future__ import annotations

from comal.messages import (
    InvalidArguments,
    Message,
    TextPart,
    ToolCallPart,
    canonical_json,
    message_from_json,
    message_to_json,
)


def test_an_invalid_call_round_trips_in_its_place() -> None:
    message = Message(
        "assistant",
        (
            ToolCallPart("c1", "Read", {"path": "a"}),
            ToolCallPart("c2", "Bash", {}, InvalidArguments('{"command": ', "not JSON")),
            TextPart("then"),
        ),
    )
    assert message_from_json(message_to_json(message)) == message


def test_a_valid_call_has_no_invalid_field() -> None:
    message = Message("assistant", (ToolCallPart("c1", "Read", {"path": "a"}),))
    assert canonical_json(message_to_json(message)) == (
        '{"parts":[{"arguments":{"path":"a"},"call_id":"c1","name":"Read","type":"tool_call"}],'
        '"role":"assistant"}'
    )
