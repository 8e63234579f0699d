"""Render scripted turns and errors in each wire's real shapes (SSE events or JSON bodies).

Shapes follow the official SDK types (openai 3.57, anthropic 2.14) and the bodies recorded in
research tech.md §3: Chat chunks with a final `"choices": []` usage chunk and `[DONE]`;
Responses `response.*` events ending in `response.completed` / `response.incomplete`;
Anthropic `message_start` … `message_stop` with cumulative `message_delta` usage. Error bodies
are the providers' own, including every overflow form the adapters must classify.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field

from comal.messages import JSONObject, JSONValue
from comal.testing.fake_checks import count_text_tokens
from comal.testing.fake_script import FakeTurn

SseItem = tuple[str | None, str]
"""(event name or None, data text)."""


@dataclass(frozen=True, slots=True)
class RenderContext:
    """Per-request facts the rendering needs."""

    model: str
    serial: int
    input_tokens: int
    include_usage: bool = True
    include_encrypted: bool = True


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """An HTTP error answer."""

    status: int
    body: JSONObject
    headers: dict[str, str] = field(default_factory=dict)


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _numbers(turn: FakeTurn, ctx: RenderContext) -> tuple[int, int, int, int, int]:
    u = turn.usage
    total = ctx.input_tokens if u.input_tokens is None else u.input_tokens
    produced = turn.text + turn.reasoning + "".join(c.argument_text for c in turn.tool_calls)
    output = count_text_tokens(produced) if u.output_tokens is None else u.output_tokens
    reasoning = u.reasoning_tokens or (count_text_tokens(turn.reasoning) if turn.reasoning else 0)
    return total, u.cached_tokens, u.cache_write_tokens, output, reasoning


def _signature(turn: FakeTurn, serial: int) -> str:
    digest = hashlib.sha256(turn.reasoning.encode()).hexdigest()[:16]
    return f"sig_fake_{serial}_{digest}"


def _encrypted(turn: FakeTurn) -> str:
    return "enc_fake_" + base64.b64encode(turn.reasoning.encode()).decode()


def dump_json(obj: JSONValue) -> str:
    """Compact JSON for event data."""
    return json.dumps(obj, separators=(",", ":"))


# --- OpenAI Chat ------------------------------------------------------------------------------

_CHAT_FINISH = {"tool_calls": "tool_calls", "length": "length", "content_filter": "content_filter"}


def _chat_usage(turn: FakeTurn, ctx: RenderContext) -> JSONObject:
    total, cached, written, output, reasoning = _numbers(turn, ctx)
    details: JSONObject = {"cached_tokens": cached}
    if written:
        details["cache_write_tokens"] = written
    return {
        "prompt_tokens": total,
        "completion_tokens": output,
        "total_tokens": total + output,
        "prompt_tokens_details": details,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def chat_events(turn: FakeTurn, ctx: RenderContext) -> list[SseItem]:
    """A Chat Completions stream for one turn."""
    base: JSONObject = {
        "id": f"chatcmpl-fake-{ctx.serial}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": ctx.model,
    }

    def chunk(delta: JSONObject, finish: str | None = None) -> SseItem:
        choice: JSONObject = {"index": 0, "delta": delta, "finish_reason": finish}
        return None, dump_json({**base, "choices": [choice]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": p}) for p in _pieces(turn.reasoning, turn.chunk_chars)]
    out += [chunk({"content": p}) for p in _pieces(turn.text, turn.chunk_chars)]
    for index, call in enumerate(turn.tool_calls):
        head: JSONObject = {"index": index, "id": call.call_id, "type": "function"}
        out.append(
            chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        )
        for piece in _pieces(call.argument_text, turn.chunk_chars):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    out.append(chunk({}, _CHAT_FINISH.get(turn.normalized_finish, "stop")))
    if ctx.include_usage:
        out.append((None, dump_json({**base, "choices": [], "usage": _chat_usage(turn, ctx)})))
    out.append((None, "[DONE]"))
    return out


def chat_json(turn: FakeTurn, ctx: RenderContext) -> JSONObject:
    """A non-streamed Chat Completions answer."""
    message: JSONObject = {"role": "assistant", "content": turn.text or None}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.argument_text},
            }
            for c in turn.tool_calls
        ]
    return {
        "id": f"chatcmpl-fake-{ctx.serial}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": ctx.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _CHAT_FINISH.get(turn.normalized_finish, "stop"),
            }
        ],
        "usage": _chat_usage(turn, ctx),
    }


# --- OpenAI Responses -------------------------------------------------------------------------


def _responses_output(turn: FakeTurn, ctx: RenderContext) -> list[JSONObject]:
    items: list[JSONObject] = []
    if turn.reasoning:
        item: JSONObject = {
            "type": "reasoning",
            "id": f"rs_fake_{ctx.serial}",
            "summary": [{"type": "summary_text", "text": turn.reasoning}],
        }
        if ctx.include_encrypted:
            item["encrypted_content"] = _encrypted(turn)
        items.append(item)
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_fake_{ctx.serial}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for index, call in enumerate(turn.tool_calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_fake_{ctx.serial}_{index}",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.argument_text,
                "status": "completed",
            }
        )
    return items


def responses_object(turn: FakeTurn, ctx: RenderContext, *, final: bool) -> JSONObject:
    """The `response` object (in progress, or final with output and usage)."""
    total, cached, written, output, reasoning = _numbers(turn, ctx)
    finish = turn.normalized_finish
    incomplete = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(finish)
    status = ("incomplete" if incomplete else "completed") if final else "in_progress"
    return {
        "id": f"resp_fake_{ctx.serial}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": ctx.model,
        "output": list[JSONValue](_responses_output(turn, ctx)) if final else [],
        "incomplete_details": {"reason": incomplete} if final and incomplete else None,
        "error": None,
        "instructions": None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "truncation": "disabled",
        "store": False,
        "text": {"format": {"type": "text"}},
        "usage": (
            {
                "input_tokens": total,
                "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": total + output,
            }
            if final
            else None
        ),
    }


def responses_events(turn: FakeTurn, ctx: RenderContext) -> list[SseItem]:
    """A Responses stream for one turn."""
    events: list[JSONObject] = [
        {"type": "response.created", "response": responses_object(turn, ctx, final=False)}
    ]
    for index, item in enumerate(_responses_output(turn, ctx)):
        kind, item_id = item["type"], item["id"]
        at: JSONObject = {"item_id": item_id, "output_index": index}
        if kind == "reasoning":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "summary": []},
                }
            )
            for piece in _pieces(turn.reasoning, turn.chunk_chars):
                events.append(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        **at,
                        "summary_index": 0,
                        "delta": piece,
                    }
                )
            events.append(
                {
                    "type": "response.reasoning_summary_text.done",
                    **at,
                    "summary_index": 0,
                    "text": turn.reasoning,
                }
            )
        elif kind == "message":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            part: JSONObject = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                {"type": "response.content_part.added", **at, "content_index": 0, "part": part}
            )
            for piece in _pieces(turn.text, turn.chunk_chars):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        **at,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                )
            events.append(
                {
                    "type": "response.output_text.done",
                    **at,
                    "content_index": 0,
                    "text": turn.text,
                    "logprobs": [],
                }
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    **at,
                    "content_index": 0,
                    "part": {**part, "text": turn.text},
                }
            )
        else:
            arguments = str(item["arguments"])
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            )
            for piece in _pieces(arguments, turn.chunk_chars):
                events.append(
                    {"type": "response.function_call_arguments.delta", **at, "delta": piece}
                )
            events.append(
                {"type": "response.function_call_arguments.done", **at, "arguments": arguments}
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = responses_object(turn, ctx, final=True)
    events.append({"type": f"response.{final['status']}", "response": final})
    return [(str(e["type"]), dump_json({**e, "sequence_number": n})) for n, e in enumerate(events)]


# --- Anthropic Messages -----------------------------------------------------------------------

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
    total, cached, written, _, _ = _numbers(turn, ctx)
    return {
        "input_tokens": max(0, total - cached - written),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
        "output_tokens": output,
    }


def _anthropic_blocks(turn: FakeTurn, ctx: RenderContext) -> list[JSONObject]:
    blocks: list[JSONObject] = []
    if turn.reasoning and turn.redacted_reasoning:
        blocks.append({"type": "redacted_thinking", "data": _encrypted(turn)})
    elif turn.reasoning:
        blocks.append(
            {
                "type": "thinking",
                "thinking": turn.reasoning,
                "signature": _signature(turn, ctx.serial),
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
    output = _numbers(turn, ctx)[3]
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
            for piece in _pieces(turn.reasoning, turn.chunk_chars):
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
            for piece in _pieces(turn.text, turn.chunk_chars):
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
            for piece in _pieces(call.argument_text, turn.chunk_chars):
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
    output = _numbers(turn, ctx)[3]
    stop = _STOP.get(turn.normalized_finish, "end_turn")
    updates = max(1, turn.usage_updates)
    for step in range(1, updates + 1):
        # Cumulative: each delta carries the running total, the last one the final count.
        so_far = output if step == updates else max(1, output * step // updates)
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": so_far},
            }
        )
    events.append({"type": "message_stop"})
    return [(str(e["type"]), dump_json(e)) for e in events]
