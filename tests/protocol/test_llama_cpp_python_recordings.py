"""Comal against what the real llama-cpp-python server answered, replayed byte for byte.

The recordings in `tests/fixtures/llama_cpp_python/` were made by
`scripts/record-llama-cpp-python.py` from `python -m llama_cpp.server` serving
SmolLM2-135M-Instruct (see each file's `server`). Each test first checks that the recording
shows the server's behaviour (so a re-recording where it changed fails loudly), then replays
it to Comal's own adapter through `comal.testing.replay_server` and checks what Comal does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import httpx2

from comal.config import ProviderConfig
from comal.errors import ContextLengthError, InvalidRequestError, ProviderError
from comal.messages import (
    JSONObject,
    JSONValue,
    Message,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    user_text,
)
from comal.providers.base import Capabilities, ModelRequest
from comal.providers.factory import make_adapter
from comal.providers.reply import collect
from comal.providers.transport import RetryingProvider
from comal.testing.replay_server import ReplayServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_cpp_python"
MODEL = "SmolLM2-135M-Instruct"
CAPS = Capabilities(context_window=2_048, max_output_tokens=2_048, window_source="explicit")
READ = ToolSpec(
    "Read",
    "Read a text file of the workspace and return its numbered lines.",
    {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File to read."}},
        "required": ["path"],
    },
)
SYSTEM = "You are a coding agent. Use tools when they help."


def recording(name: str) -> JSONObject:
    doc = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    assert str(doc["server"]).startswith("llama-cpp-python ")
    return doc


def exchanges(name: str) -> list[JSONObject]:
    found = recording(name)["exchanges"]
    assert isinstance(found, list)
    return [e for e in found if isinstance(e, dict)]


def field(obj: JSONValue, *path: str) -> JSONValue:
    for key in path:
        assert isinstance(obj, Mapping), (path, obj)
        obj = obj[key]
    return obj


def config(server: ReplayServer) -> ProviderConfig:
    return ProviderConfig(
        name="lcp", wire="openai-chat", base_url=server.openai_base_url, model=MODEL
    )


def posted(server: ReplayServer) -> list[JSONObject]:
    """The bodies Comal POSTed to the chat endpoint, in order."""
    out = []
    for received in server.received:
        if received["path"] == "/v1/chat/completions":
            body = received["body"]
            assert isinstance(body, dict)
            out.append(body)
    return out


async def replay(
    name: str, request: ModelRequest, retries: int = 0
) -> tuple[ReplayServer, ProviderError | None]:
    """Send `request` once to the replayed recording; the error it ended with, if any."""
    with ReplayServer(FIXTURES / f"{name}.json") as server:
        async with httpx2.AsyncClient() as client:
            adapter = make_adapter(config(server), client=client, api_key=None, capabilities=CAPS)
            provider = RetryingProvider(adapter, retries, base_delay_s=0.0)
            try:
                await collect(provider.stream(request))
            except ProviderError as exc:
                return server, exc
    return server, None


async def test_an_empty_200_stream_is_diagnosed_by_asking_again_without_streaming() -> None:
    streamed, probe = exchanges("empty_stream_on_oversize")
    # What the server did: the streamed oversized request got HTTP 200 and no body at all;
    # the same request without streaming got a proper context-length error.
    assert field(streamed, "request", "body", "stream") is True
    assert field(streamed, "response", "status") == 200
    assert field(streamed, "response", "body") == ""
    assert field(probe, "request", "body", "stream") is False
    assert field(probe, "response", "status") == 400
    assert "context" in str(field(probe, "response", "body")).lower()

    huge = user_text("Summarise this log.\n" + "line of log text\n" * 1_200)
    request = ModelRequest(MODEL, SYSTEM, (huge,), max_output_tokens=256)
    server, error = await replay("empty_stream_on_oversize", request)
    assert isinstance(error, ContextLengthError), error
    assert error.limit_tokens == 2_048
    first, second = posted(server)
    assert first["stream"] is True
    assert (second["stream"], second["max_tokens"]) == (False, 1)
    assert "stream_options" not in second
    assert second["messages"] == first["messages"], "the same request, asked once more"


async def test_the_500_on_null_content_is_an_invalid_request_and_comal_sends_empty_text() -> None:
    rejected, accepted = exchanges("null_content_500")
    # What the server did: `"content": null` on the assistant's tool-call message → HTTP 500
    # with a validation body; the same history with `""` → an answer.
    rejected_history = field(rejected, "request", "body", "messages")
    assert isinstance(rejected_history, list)
    assert field(rejected_history[2], "content") is None
    assert field(rejected, "response", "status") == 500
    assert "validation" in str(field(rejected, "response", "body")).lower()
    assert field(accepted, "response", "status") == 200

    call = Message("assistant", (ToolCallPart("call_1", "Read", {}),))
    result = Message("user", (ToolResultPart("call_1", "Read", "1\t# Demo"),))
    request = ModelRequest(
        MODEL,
        SYSTEM,
        (user_text("Read README.md"), call, result),
        tools=(READ,),
        max_output_tokens=8,
    )
    # The recorded 500 is classified as a bad request and not retried (a retry would have
    # been answered with the recorded 200).
    server, error = await replay("null_content_500", request, retries=3)
    assert isinstance(error, InvalidRequestError), error
    (sent,) = posted(server)
    messages = sent["messages"]
    assert isinstance(messages, list)
    assistant = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    assert [m["content"] for m in assistant] == [""]
    assert assistant[0]["tool_calls"]


async def test_tools_reach_the_prompt_only_with_tool_choice_and_comal_sends_auto() -> None:
    without, with_auto = exchanges("tools_need_tool_choice")
    # What the server did: without `tool_choice` it rendered the prompt without the tools.
    bare_request = field(without, "request", "body")
    assert isinstance(bare_request, dict)
    assert "tool_choice" not in bare_request
    assert field(with_auto, "request", "body", "tool_choice") == "auto"
    bare = json.loads(str(field(without, "response", "body")))
    rendered = json.loads(str(field(with_auto, "response", "body")))
    bare_prompt = field(bare, "usage", "prompt_tokens")
    tools_prompt = field(rendered, "usage", "prompt_tokens")
    assert isinstance(bare_prompt, int)
    assert isinstance(tools_prompt, int)
    assert tools_prompt > bare_prompt + 50, "the tool schema was rendered into the prompt"

    request = ModelRequest(
        MODEL, SYSTEM, (user_text("Read README.md"),), tools=(READ,), max_output_tokens=8
    )
    server, _ = await replay("tools_need_tool_choice", request)
    (sent,) = posted(server)
    assert sent["tool_choice"] == "auto"
    tools = sent["tools"]
    assert isinstance(tools, list)
    assert [field(t, "function", "name") for t in tools] == ["Read"]


async def test_a_tool_call_the_server_cannot_stream_is_asked_unstreamed_and_decoded() -> None:
    streamed, probe, whole = exchanges("streamed_tool_choice_auto")
    # What the server did: streamed with tools and tool_choice auto → HTTP 200, empty body
    # (chatml-function-calling raises inside the stream); unstreamed → a tool call.
    assert field(streamed, "request", "body", "stream") is True
    assert (field(streamed, "response", "status"), field(streamed, "response", "body")) == (
        200,
        "",
    )
    for answered in (probe, whole):
        assert field(answered, "request", "body", "stream") is False
        assert field(answered, "response", "status") == 200

    request = ModelRequest(
        MODEL, SYSTEM, (user_text("Read README.md"),), tools=(READ,), max_output_tokens=32
    )
    with ReplayServer(FIXTURES / "streamed_tool_choice_auto.json") as server:
        async with httpx2.AsyncClient() as client:
            adapter = make_adapter(config(server), client=client, api_key=None, capabilities=CAPS)
            reply = await collect(adapter.stream(request))
    sent = posted(server)
    assert [(b["stream"], b["max_tokens"], b["tool_choice"]) for b in sent] == [
        (True, 32, "auto"),
        (False, 1, "auto"),
        (False, 32, "auto"),
    ]
    (call,) = reply.message.tool_calls
    assert call.name == "Read"
    assert call.arguments == {"path": "README.md"}
    assert reply.finish == "tool_calls"
    assert reply.usage.total_input is not None
