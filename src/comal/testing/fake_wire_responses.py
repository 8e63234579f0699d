"""OpenAI Responses rendering of a scripted turn (research tech.md §3).

A stream is `response.created`, then per output item (reasoning, message, function call) its
`added` / delta / `done` events, and `response.completed` or `response.incomplete` carrying
the final object with usage. Every event has its `sequence_number`.
"""

from __future__ import annotations

from comal.messages import JSONObject, JSONValue
from comal.testing.fake_render import (
    RenderContext,
    SseItem,
    dump_json,
    encrypted_reasoning,
    pieces,
    usage_numbers,
)
from comal.testing.fake_script import FakeTurn


def _content_part(turn: FakeTurn, text: str) -> JSONObject:
    """An `output_text` part, or a `refusal` part when the turn is scripted as a refusal."""
    if turn.normalized_finish == "refusal":
        return {"type": "refusal", "refusal": text}
    return {"type": "output_text", "text": text, "annotations": []}


def _responses_output(turn: FakeTurn, ctx: RenderContext) -> list[JSONObject]:
    items: list[JSONObject] = []
    if turn.reasoning:
        item: JSONObject = {
            "type": "reasoning",
            "id": f"rs_fake_{ctx.serial}",
            "summary": [{"type": "summary_text", "text": turn.reasoning}],
        }
        if ctx.include_encrypted:
            item["encrypted_content"] = encrypted_reasoning(turn)
        items.append(item)
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_fake_{ctx.serial}",
                "role": "assistant",
                "status": "completed",
                "content": [_content_part(turn, turn.text)],
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
    total, cached, written, output, reasoning = usage_numbers(turn, ctx)
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
            for piece in pieces(turn.reasoning, turn.chunk_chars):
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
            refusal = turn.normalized_finish == "refusal"
            stem, field = ("refusal", "refusal") if refusal else ("output_text", "text")
            extra: JSONObject = {} if refusal else {"logprobs": []}
            events.append(
                {
                    "type": "response.content_part.added",
                    **at,
                    "content_index": 0,
                    "part": _content_part(turn, ""),
                }
            )
            for piece in pieces(turn.text, turn.chunk_chars):
                events.append(
                    {
                        "type": f"response.{stem}.delta",
                        **at,
                        "content_index": 0,
                        "delta": piece,
                        **extra,
                    }
                )
            events.append(
                {
                    "type": f"response.{stem}.done",
                    **at,
                    "content_index": 0,
                    field: turn.text,
                    **extra,
                }
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    **at,
                    "content_index": 0,
                    "part": _content_part(turn, turn.text),
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
            for piece in pieces(arguments, turn.chunk_chars):
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
