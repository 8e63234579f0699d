"""A rich wire-independent request shared by the golden and replay tests."""

from __future__ import annotations

from comal.messages import (
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from comal.providers.base import ModelRequest

TOOLS = (
    ToolSpec(
        "shell",
        "Run a shell command.",
        {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    ),
    ToolSpec(
        "read_file",
        "Read a file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
)


def rich_request(wire: str, model: str, effort: str | None = None) -> ModelRequest:
    """Text, replayable and foreign reasoning, parallel calls, error and image results."""
    assistant = Message(
        "assistant",
        (
            ReasoningPart(
                wire,
                model,
                text="Plan: list then read.",
                signature="sig_same",
                encrypted_content="enc_same",
                item_id="rs_same",
            ),
            ReasoningPart(
                "anthropic-messages" if wire != "anthropic-messages" else "openai-chat",
                "other-model",
                text="foreign",
                signature="sig_other",
                encrypted_content="enc_other",
            ),
            TextPart("Looking around."),
            ToolCallPart("call_1", "shell", {"cmd": "ls"}),
            ToolCallPart("call_2", "read_file", {"path": "a.png"}),
        ),
    )
    results = Message(
        "user",
        (
            ToolResultPart("call_1", "shell", "a.png\nb.py\n", is_error=False),
            ToolResultPart(
                "call_2",
                "read_file",
                "binary image",
                is_error=True,
                media=(MediaPart("image/png", "iVBORw0KGgo="),),
            ),
            TextPart("Now fix b.py."),
        ),
    )
    return ModelRequest(
        model=model,
        system="You are Comal.",
        messages=(Message("user", (TextPart("What is here?"),)), assistant, results),
        tools=TOOLS,
        max_output_tokens=2048,
        reasoning_effort=effort,
    )
