"""Usage normalization per wire (research tech.md §3.7), pure functions over the raw usage JSON.

- OpenAI Chat and Responses count cached (and cache-written) tokens *inside* the prompt/input
  total, and reasoning *inside* the output: `new_input = total − cache_read − cache_write`.
- Anthropic's `input_tokens` already *excludes* cache reads and writes.
- A field the provider did not send stays `None` (unknown), never 0. `new_input` is only
  computed when the total is known.
"""

from __future__ import annotations

from comal.messages import JSONObject, JSONValue
from comal.usage import Usage


def _int(obj: JSONValue, *path: str) -> int | None:
    node = obj
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    if isinstance(node, bool) or not isinstance(node, int):
        return None
    return node


def _openai_style(raw: JSONObject, total_key: str, details_key: str, out_key: str) -> Usage:
    total = _int(raw, total_key)
    cache_read = _int(raw, details_key, "cached_tokens")
    cache_write = _int(raw, details_key, "cache_write_tokens")
    new_input = None if total is None else total - (cache_read or 0) - (cache_write or 0)
    return Usage(
        new_input=new_input,
        cache_read=cache_read,
        cache_write=cache_write,
        output=_int(raw, out_key),
        reasoning=_int(
            raw, f"{out_key.removesuffix('_tokens')}_tokens_details", "reasoning_tokens"
        ),
    )


def usage_from_openai_chat(raw: JSONObject) -> Usage:
    """Chat `usage`: `prompt_tokens` includes `cached_tokens`; completion includes reasoning."""
    return _openai_style(raw, "prompt_tokens", "prompt_tokens_details", "completion_tokens")


def usage_from_openai_responses(raw: JSONObject) -> Usage:
    """Responses `usage`: `input_tokens` includes `cached_tokens`; output includes reasoning."""
    return _openai_style(raw, "input_tokens", "input_tokens_details", "output_tokens")


def usage_from_anthropic(raw: JSONObject) -> Usage:
    """Anthropic `usage`: `input_tokens` excludes cache reads and writes."""
    reasoning = _int(raw, "output_tokens_details", "thinking_tokens")
    if reasoning is None:
        reasoning = _int(raw, "output_tokens_details", "reasoning_tokens")
    return Usage(
        new_input=_int(raw, "input_tokens"),
        cache_read=_int(raw, "cache_read_input_tokens"),
        cache_write=_int(raw, "cache_creation_input_tokens"),
        output=_int(raw, "output_tokens"),
        reasoning=reasoning,
    )


def merge_anthropic_usage(current: JSONObject, delta: JSONObject) -> JSONObject:
    """Overlay a `message_delta` usage on what is known so far.

    Anthropic documents `message_delta.usage` as cumulative, so each field present in the delta
    *replaces* the earlier value (several deltas can arrive with server tools); nulls in the
    delta do not erase a known value.
    """
    merged = dict(current)
    for key, value in delta.items():
        if value is not None:
            merged[key] = value
    return merged
