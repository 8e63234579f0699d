"""Request options every wire sends: `tool_choice`, `""` tool-call content, `extra_body`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest

from comal.config import ProviderConfig, load_config
from comal.errors import ConfigError
from comal.messages import JSONObject, Message, ToolCallPart, ToolResultPart, user_text
from comal.providers.anthropic_messages import AnthropicMessagesProvider
from comal.providers.base import Capabilities, ModelRequest
from comal.providers.http_stream import WireProvider, merge_extra_body
from comal.providers.openai_chat import OpenAIChatProvider
from comal.providers.openai_responses import OpenAIResponsesProvider
from tests.protocol.requests import TOOLS

CAPS = Capabilities(context_window=100_000, max_output_tokens=4096, window_source="explicit")
ADAPTERS: list[type[WireProvider]] = [
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    AnthropicMessagesProvider,
]
AUTO = {
    "openai-chat": "auto",
    "openai-responses": "auto",
    "anthropic-messages": {"type": "auto"},
}


def adapter(cls: type[WireProvider], extra: JSONObject | None = None) -> WireProvider:
    cfg = ProviderConfig(
        name="t", wire=cls.wire.value, base_url="http://h/v1", model="m", extra_body=extra or {}
    )
    client = httpx2.AsyncClient()
    return cls(cfg, client=client, api_key=None, capabilities=CAPS)


def body_of(provider: WireProvider, request: ModelRequest) -> JSONObject:
    decoded = json.loads(provider.encode(request))
    assert isinstance(decoded, dict)
    return decoded


WITH_TOOLS = ModelRequest("m", "sys", (user_text("hi"),), tools=TOOLS)
NO_TOOLS = ModelRequest("m", "sys", (user_text("hi"),))


@pytest.mark.parametrize("cls", ADAPTERS)
def test_tool_choice_auto_whenever_tools_are_offered(cls: type[WireProvider]) -> None:
    provider = adapter(cls)
    assert body_of(provider, WITH_TOOLS)["tool_choice"] == AUTO[cls.wire.value]
    assert "tool_choice" not in body_of(provider, NO_TOOLS)


def test_chat_tool_call_only_turn_has_empty_string_content() -> None:
    calls = Message("assistant", (ToolCallPart("c1", "shell", {"cmd": "ls"}),))
    results = Message("user", (ToolResultPart("c1", "shell", "a\n"),))
    request = ModelRequest("m", "sys", (user_text("go"), calls, results), tools=TOOLS)
    messages = body_of(adapter(OpenAIChatProvider), request)["messages"]
    assert isinstance(messages, list)
    assistant = [m for m in messages if isinstance(m, dict) and m["role"] == "assistant"]
    assert assistant[0]["content"] == ""
    assert "null" not in json.dumps(assistant)


@pytest.mark.parametrize("cls", ADAPTERS)
def test_extra_body_merges_into_every_request(cls: type[WireProvider]) -> None:
    extra: JSONObject = {
        "cache_prompt": True,
        "top_k": 20,
        "tool_choice": {"type": "function", "function": {"name": "shell"}},
    }
    provider = adapter(cls, extra)
    for request in (WITH_TOOLS, NO_TOOLS):
        body = body_of(provider, request)
        assert body["cache_prompt"] is True
        assert body["top_k"] == 20
        assert body["model"] == "m"
        assert body["stream"] is True
    assert body_of(provider, WITH_TOOLS)["tool_choice"] == extra["tool_choice"]
    # A tool choice without tools is an error on the OpenAI wires: never sent.
    assert "tool_choice" not in body_of(provider, NO_TOOLS)


CALLED = Message("assistant", (ToolCallPart("c1", "shell", {"cmd": "ls"}),))
ANSWERED = Message("user", (ToolResultPart("c1", "shell", "a\n"),))


@pytest.mark.parametrize("cls", ADAPTERS)
def test_a_forced_tool_choice_yields_to_auto_once_a_call_is_answered(
    cls: type[WireProvider],
) -> None:
    provider = adapter(cls, {"tool_choice": "required", "cache_prompt": True})
    after_call = ModelRequest("m", "sys", (user_text("go"), CALLED, ANSWERED), tools=TOOLS)
    body = body_of(provider, after_call)
    assert body["tool_choice"] == AUTO[cls.wire.value]
    assert body["cache_prompt"] is True, "the rest of extra_body still applies"
    # The user's next words force the choice again.
    next_ask = replace(after_call, messages=(*after_call.messages, user_text("and now?")))
    assert body_of(provider, next_ask)["tool_choice"] == "required"


def test_extra_body_tables_merge_and_scalars_replace() -> None:
    body: JSONObject = {"stream_options": {"include_usage": True}, "tool_choice": "auto", "n": 1}
    merged = merge_extra_body(
        body, {"stream_options": {"continuous_usage_stats": True}, "tool_choice": "required"}
    )
    assert merged == {
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "tool_choice": "required",
        "n": 1,
    }
    assert body["tool_choice"] == "auto", "the encoded body is not changed in place"


def write_config(tmp_path: Path, text: str) -> Path:
    (tmp_path / ".comal").mkdir()
    (tmp_path / ".comal" / "config.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_extra_body_is_read_from_the_provider_table(tmp_path: Path) -> None:
    cwd = write_config(
        tmp_path,
        """
[providers.local]
wire = "openai-chat"
base_url = "http://127.0.0.1:8080/v1"
model = "smol"

[providers.local.extra_body]
cache_prompt = true
top_k = 20
tool_choice = { type = "function", function = { name = "shell" } }
stop = ["</s>"]
""",
    )
    cfg = load_config(env={"HOME": str(tmp_path)}, cwd=cwd).providers["local"]
    assert cfg.extra_body == {
        "cache_prompt": True,
        "top_k": 20,
        "tool_choice": {"type": "function", "function": {"name": "shell"}},
        "stop": ["</s>"],
    }


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        ("extra_body = 3", "extra_body must be a table"),
        ("extra_body = { seed = 1979-05-27 }", "extra_body.seed: date values have no JSON form"),
    ],
)
def test_bad_extra_body_is_a_config_error(tmp_path: Path, snippet: str, message: str) -> None:
    cwd = write_config(
        tmp_path,
        f'[providers.local]\nwire = "openai-chat"\nbase_url = "http://h/v1"\n{snippet}\n',
    )
    with pytest.raises(ConfigError, match=message):
        load_config(env={"HOME": str(tmp_path)}, cwd=cwd)
