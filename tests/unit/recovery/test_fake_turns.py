"""The fake server's `turn_by = "answered"`: a resumed client gets the turn it never received."""

from __future__ import annotations

from collections.abc import Mapping

from comal.messages import JSONObject
from comal.testing.fake_script import FakeTurn
from comal.testing.fake_server import FakeServer

TURNS: list[str | Mapping[str, object]] = [
    {"tool_calls": [{"id": "a1", "name": "Bash", "arguments": {"command": "true"}}]},
    {"tool_calls": [{"id": "b1", "name": "Bash", "arguments": {"command": "true"}}]},
    "done",
]


def _chat(*answered: str) -> JSONObject:
    messages: list[object] = [{"role": "user", "content": "go"}]
    for call_id in answered:
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "Bash", "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
    return {"model": "fake-model", "messages": messages}  # type: ignore[dict-item]


def _served(server: FakeServer, body: JSONObject) -> FakeTurn:
    _, turn, _ = server.answer("/v1/chat/completions", body, {})
    assert isinstance(turn, FakeTurn)
    return turn


def test_a_repeated_request_gets_the_same_turn_and_answers_move_on() -> None:
    with FakeServer(TURNS, turn_by="answered") as server:
        first = _served(server, _chat())
        again = _served(server, _chat())  # the client was killed mid-stream and resumed
        assert first == again
        assert first.tool_calls[0].call_id == "a1"
        assert _served(server, _chat("a1")).tool_calls[0].call_id == "b1"
        # A checkpoint may drop answered calls from the request; the server remembers them.
        assert _served(server, _chat()).tool_calls[0].call_id == "b1"
        assert _served(server, _chat("a1", "b1")).text == "done"
        assert _served(server, _chat()).text == "done"
        assert server.stats().orphan_violations == 0
