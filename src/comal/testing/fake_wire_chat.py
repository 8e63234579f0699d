"""OpenAI Chat Completions rendering of a scripted turn (research tech.md §3).

A stream is a role chunk, reasoning/text/tool-call deltas, a finish chunk, then (when the
request asked for usage) a final `"choices": []` usage chunk, and `[DONE]`.
"""

from __future__ import annotations

from comal.messages import JSONObject
from comal.testing.fake_render import RenderContext, SseItem, dump_json, pieces, usage_numbers
from comal.testing.fake_script import FakeTurn

_CHAT_FINISH = {"tool_calls": "tool_calls", "length": "length", "content_filter": "content_filter"}


def _chat_usage(turn: FakeTurn, ctx: RenderContext) -> JSONObject:
    total, cached, written, output, reasoning = usage_numbers(turn, ctx)
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

    refusal = turn.normalized_finish == "refusal"
    # A refusal comes as `delta.refusal` with null content and finish `stop` (gpt-4o's form).
    first: JSONObject = {"role": "assistant", "content": None, "refusal": ""}
    out = [chunk(first if refusal else {"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": p}) for p in pieces(turn.reasoning, turn.chunk_chars)]
    field = "refusal" if refusal else "content"
    out += [chunk({field: p}) for p in pieces(turn.text, turn.chunk_chars)]
    for index, call in enumerate(turn.tool_calls):
        head: JSONObject = {"index": index, "id": call.call_id, "type": "function"}
        out.append(
            chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        )
        for piece in pieces(call.argument_text, turn.chunk_chars):
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
