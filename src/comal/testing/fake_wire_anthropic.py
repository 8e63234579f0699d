"""Anthropic Messages rendering of a scripted turn (research tech.md §3).

A stream is `message_start`, `ping`, each content block's start / deltas / stop (thinking with
its signature, redacted thinking, text, tool use), cumulative `message_delta` usage updates,
and `message_stop`.
"""

from __future__ import annotations

import json

from comal.messages import JSONObject, JSONValue
from comal.testing.fake_render import (
    RenderContext,
    SseItem,
    dump_json,
    encrypted_reasoning,
    pieces,
    signature,
    usage_numbers,
)
from comal.testing.fake_script import FakeTurn

_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "context_window_exceeded": "model_context_window_exceeded",
    "refusal": "refusal",
    "pause": "pause_turn",
    "content_filter": "refusal",
}


def _anthropic_usage(turn: FakeTurn, ctx: RenderContext, output: int) -> JSONObject:
    total, cached, written, _, _ = usage_numbers(turn, ctx)
    return {
        "input_tokens": max(0, total - cached - written),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
        "output_tokens": output,
    }


def _anthropic_blocks(turn: FakeTurn, ctx: RenderContext) -> list[JSONObject]:
    blocks: list[JSONObject] = []
    if turn.reasoning and turn.redacted_reasoning:
        blocks.append({"type": "redacted_thinking", "data": encrypted_reasoning(turn)})
    elif turn.reasoning:
        blocks.append(
            {
                "type": "thinking",
                "thinking": turn.reasoning,
                "signature": signature(turn, ctx.serial),
            }
        )
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for call in turn.tool_calls:
        try:
            parsed: JSONValue = json.loads(call.argument_text)
        except ValueError:
            parsed = {}
        blocks.append({"type": "tool_use", "id": call.call_id, "name": call.name, "input": parsed})
    return blocks


def anthropic_json(turn: FakeTurn, ctx: RenderContext) -> JSONObject:
    """A non-streamed Messages answer."""
    output = usage_numbers(turn, ctx)[3]
    return {
        "id": f"msg_fake_{ctx.serial}",
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": list[JSONValue](_anthropic_blocks(turn, ctx)),
        "stop_reason": _STOP.get(turn.normalized_finish, "end_turn"),
        "stop_sequence": None,
        "usage": _anthropic_usage(turn, ctx, output),
    }


def anthropic_events(turn: FakeTurn, ctx: RenderContext) -> list[SseItem]:
    """A Messages stream for one turn."""
    start = {**anthropic_json(turn, ctx), "content": [], "stop_reason": None}
    start["usage"] = _anthropic_usage(turn, ctx, 1)
    events: list[JSONObject] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(_anthropic_blocks(turn, ctx)):
        kind = block["type"]
        at: JSONObject = {"index": index}
        if kind == "thinking":
            events.append(
                {
                    "type": "content_block_start",
                    **at,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
            )
            for piece in pieces(turn.reasoning, turn.chunk_chars):
                events.append(
                    {
                        "type": "content_block_delta",
                        **at,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    }
                )
            events.append(
                {
                    "type": "content_block_delta",
                    **at,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                }
            )
        elif kind == "text":
            events.append(
                {"type": "content_block_start", **at, "content_block": {"type": "text", "text": ""}}
            )
            for piece in pieces(turn.text, turn.chunk_chars):
                events.append(
                    {
                        "type": "content_block_delta",
                        **at,
                        "delta": {"type": "text_delta", "text": piece},
                    }
                )
        elif kind == "tool_use":
            call = turn.tool_calls[
                index - (len(_anthropic_blocks(turn, ctx)) - len(turn.tool_calls))
            ]
            events.append(
                {"type": "content_block_start", **at, "content_block": {**block, "input": {}}}
            )
            for piece in pieces(call.argument_text, turn.chunk_chars):
                events.append(
                    {
                        "type": "content_block_delta",
                        **at,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
        else:
            events.append({"type": "content_block_start", **at, "content_block": block})
        events.append({"type": "content_block_stop", **at})
    output = usage_numbers(turn, ctx)[3]
    stop = _STOP.get(turn.normalized_finish, "end_turn")
    updates = max(1, turn.usage_updates)
    delta: JSONObject = {"stop_reason": stop, "stop_sequence": None}
    if stop == "refusal":
        # The form of the Messages API's refusals (the SDK's recorded refusal stream).
        delta["stop_details"] = {
            "type": "refusal",
            "category": "cyber",
            "explanation": "This request was refused due to policy.",
        }
    for step in range(1, updates + 1):
        # Cumulative: each delta carries the running total, the last one the final count.
        so_far = output if step == updates else max(1, output * step // updates)
        events.append(
            {
                "type": "message_delta",
                "delta": delta,
                "usage": {"output_tokens": so_far},
            }
        )
    events.append({"type": "message_stop"})
    return [(str(e["type"]), dump_json(e)) for e in events]
