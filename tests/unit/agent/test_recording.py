"""What the loop records around one model call (`agent.recording`), on a real session's ledger.

The request entry is checked against the encoded bytes it describes, the reply entry field by
field, and the refusal and prompt-truncation cases against the entries and events they add.
"""

from __future__ import annotations

import hashlib

from comal.agent.core.events import AssistantReplied, Notice
from comal.agent.core.recording import error_json, record_reply, record_request
from comal.errors import RateLimitError
from comal.messages import (
    Finish,
    InvalidArguments,
    Message,
    TextPart,
    ToolCallPart,
    message_to_json,
    user_text,
)
from comal.providers.base import ModelRequest, encode_request
from comal.providers.reply import Reply
from comal.usage import Usage
from tests.unit.recovery.conftest import Bench

CALLS = Message(
    "assistant",
    (
        TextPart("Looking."),
        ToolCallPart("c1", "Glob", {"pattern": "*"}),
        ToolCallPart("c2", "Read", {}, InvalidArguments('{"path', "not JSON")),
        ToolCallPart("c3", "Grep", {"pattern": "x"}),
    ),
)


def reply(message: Message, finish: Finish, usage: Usage, *, refusal: str = "") -> Reply:
    return Reply(message, finish, str(finish), usage, {"raw": True}, refusal=refusal)


async def test_a_request_is_recorded_by_the_digest_and_size_of_its_body(bench: Bench) -> None:
    s, _ = bench.open()
    request = ModelRequest(
        s.provider.model,
        "sys",
        (user_text("hi"),),
        max_output_tokens=1_234,
        reasoning_effort="low",
    )
    encoded = encode_request(s.provider, request)
    entry_id = record_request(s, encoded, 321, 2)
    (entry,) = bench.ledger.entries(s.id, kinds=("provider.request",))
    assert entry.id == entry_id
    assert entry.payload == {
        "sha256": "sha256:" + hashlib.sha256(encoded.body).hexdigest(),
        "size_bytes": len(encoded.body),
        "wire": "openai-chat",
        "model": "scripted-model",
        "fingerprint": {
            "model": "scripted-model",
            "effort": "low",
            "tools_digest": s.tools_digest,
            "config_digest": s.config_digest,
            "checkpoint": 2,
        },
        "estimated_input_tokens": 321,
        "output_reserve": 1_234,
    }


async def test_a_reply_is_recorded_whole_with_its_calls_in_stream_order(bench: Bench) -> None:
    s, _ = bench.open()
    usage = Usage(new_input=900, cache_read=100, cache_write=0, output=20)
    message = record_reply(s, reply(CALLS, Finish.TOOL_CALLS, usage), "evt_request", 1_000)
    assert message == CALLS
    (entry,) = bench.ledger.entries(s.id, kinds=("message.assistant",))
    assert entry.payload == {
        "message": message_to_json(CALLS),
        "wire": "openai-chat",
        "model": "scripted-model",
        "finish": "tool_calls",
        "usage": usage.to_json(),
        "usage_raw": {"raw": True},
        "request_entry": "evt_request",
    }
    assert bench.ledger.entries(s.id, kinds=("warning",)) == []
    replied = [e for e in bench.events if isinstance(e, AssistantReplied)]
    assert replied == [AssistantReplied("Looking.", 3, Finish.TOOL_CALLS, 1_000, 20)]


async def test_a_refusal_is_recorded_with_its_words_and_its_calls_dropped(bench: Bench) -> None:
    s, _ = bench.open()
    refused = reply(CALLS, Finish.REFUSAL, Usage(new_input=50, output=5), refusal="No.")
    message = record_reply(s, refused, "evt_request", 50)
    assert message == Message("assistant", (TextPart("Looking."),))
    (entry,) = bench.ledger.entries(s.id, kinds=("message.assistant",))
    assert entry.payload["message"] == message_to_json(message)
    assert entry.payload["refusal"] == {
        "text": "No.",
        "reason": "",
        "details": None,
        "dropped_calls": 3,
    }


async def test_a_prompt_the_server_counted_far_shorter_gets_a_warning(bench: Bench) -> None:
    s, _ = bench.open()
    record_reply(s, reply(CALLS, Finish.STOP, Usage(new_input=2_000, output=5)), "evt_r", 8_000)
    (warning,) = bench.ledger.entries(s.id, kinds=("warning",))
    assert warning.payload["code"] == "PROMPT_TRUNCATED"
    notices = [e for e in bench.events if isinstance(e, Notice)]
    assert [(n.code, n.message) for n in notices] == [
        ("PROMPT_TRUNCATED", warning.payload["message"])
    ]


def test_a_provider_error_is_recorded_by_code_message_and_status() -> None:
    error = RateLimitError("slow down", status=429, retry_after=3.0)
    assert error_json(error) == {"code": "RATE_LIMIT", "message": "slow down", "status": 429}
