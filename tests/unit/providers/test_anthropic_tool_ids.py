"""Tool ids on the Messages wire: only `^[a-zA-Z0-9_-]+$` is accepted (a 400 otherwise), so an
id from elsewhere (an imported session's `<id>#<n>`, another server's) is mapped, call and
result alike, and a valid id is sent as it is."""

from __future__ import annotations

import re
from typing import Any

import httpx2

from comal.config import ProviderConfig
from comal.messages import Message, TextPart, ToolCallPart, ToolResultPart, user_text
from comal.providers.anthropic_messages import tool_id
from comal.providers.base import Capabilities, ModelRequest
from comal.providers.factory import make_provider
from comal.providers.reply import collect
from comal.testing.fake_server import FakeServer

CAPS = Capabilities(context_window=8_192, max_output_tokens=512, window_source="explicit")
PATTERN = re.compile(r"[a-zA-Z0-9_-]+")
IDS = ("toolu_01AbC-9", "call_0#2", "a.b", "a_b", "a b", "")


def _history() -> tuple[Message, ...]:
    messages: list[Message] = [user_text("go")]
    for n, call_id in enumerate(IDS):
        call = ToolCallPart(call_id, "Read", {"path": f"f{n}.txt"})
        messages.append(Message("assistant", (TextPart(f"step {n}"), call)))
        messages.append(Message("user", (ToolResultPart(call_id, "Read", f"content {n}"),)))
    return tuple(messages)


def test_a_valid_id_is_kept_and_any_other_becomes_a_distinct_valid_one() -> None:
    mapped = [tool_id(i) for i in IDS]
    assert mapped[0] == "toolu_01AbC-9"
    assert mapped[3] == "a_b"
    assert all(PATTERN.fullmatch(m) for m in mapped)
    assert len(set(mapped)) == len(IDS)  # "a.b", "a b" and "a_b" never meet
    assert mapped == [tool_id(i) for i in IDS]  # the same id maps the same way every time


async def test_the_server_accepts_a_history_with_foreign_ids() -> None:
    with FakeServer(["done"]) as server:
        cfg = ProviderConfig(
            name="a", wire="anthropic-messages", base_url=server.base_url, model="claude-x"
        )
        async with httpx2.AsyncClient() as client:
            provider = make_provider(
                cfg, client=client, api_key="k", context_window_override=None, capabilities=CAPS
            )
            request = ModelRequest("claude-x", "sys", _history(), max_output_tokens=64)
            reply = await collect(provider.stream(request))
        stats = server.stats()
        (received,) = server.received
    assert reply.message.text == "done"
    assert stats.violations == ()
    body: Any = received.body
    blocks = [b for m in body["messages"] for b in m["content"]]
    uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    answers = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    assert uses == answers == [tool_id(i) for i in IDS]
