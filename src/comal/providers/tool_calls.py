"""Turn a streamed tool call (id, name, raw argument text) into a typed event.

Arguments that are not a JSON object become `ToolCallInvalid` carrying the raw text and the
parse error: a model's malformed JSON is data for the agent to answer, never a crash. Empty
argument text means "no arguments" (several servers stream `""` for argument-less tools).
"""

from __future__ import annotations

import json

from comal.ids import new_id
from comal.messages import JSONValue, ToolCallPart
from comal.providers.base import ToolCallDone, ToolCallInvalid


def decode_tool_call(call_id: str, name: str, raw_arguments: str) -> ToolCallDone | ToolCallInvalid:
    """Parse the arguments of a complete tool call.

    Args:
        call_id: the provider's id, kept verbatim (a fresh `call_…` id if the server sent none).
        name: the tool name.
        raw_arguments: the concatenated argument text.
    """
    if not call_id:
        # Some local servers omit ids; results must still pair with a unique call.
        call_id = new_id("call")
    if raw_arguments.strip() == "":
        return ToolCallDone(ToolCallPart(call_id, name, {}))
    try:
        value: JSONValue = json.loads(raw_arguments)
    except (ValueError, RecursionError) as exc:
        return ToolCallInvalid(call_id, name, raw_arguments, f"arguments are not valid JSON: {exc}")
    if not isinstance(value, dict):
        return ToolCallInvalid(
            call_id,
            name,
            raw_arguments,
            f"arguments must be a JSON object, got {type(value).__name__}",
        )
    return ToolCallDone(ToolCallPart(call_id, name, value))
