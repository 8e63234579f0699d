"""A loopback fake LLM server speaking OpenAI Chat, OpenAI Responses and Anthropic Messages.

`FakeServer` serves HTTP on `127.0.0.1:0` (`fake_http`) and answers model calls from a script
of wire-independent turns (`comal.testing.fake_script`), rendered in the wire of the endpoint
that was hit: `…/chat/completions`, `…/responses`, `…/messages`. Streams are SSE with
`Connection: close` (the anthropic SDK waits forever on a keep-alive stream without length).

Every model request is checked before a turn is spent (`fake_checks`): call/result pairing,
system first, no duplicate ids — a violation is counted and answered with the wire's 400 — and
the request size against `window` (o200k count by default, or a given estimator) — an overflow
is counted and answered with the wire's real overflow error. A request with no turn left gets
a clear 500 and is counted as unexpected. A stream the client closes before its end is counted
as abandoned; a scripted stall or delay notices at once (`fake_http`), so a cancel is observable.
`stats()` and `received` expose what happened.

Discovery endpoints make window discovery testable: `GET /v1/models` (vLLM `max_model_len`,
llama.cpp `meta.n_ctx_train`), `GET /v1/models/{id}` (Anthropic `max_input_tokens`),
`GET /props` (llama.cpp `n_ctx`), `POST /api/show` and `GET /api/ps` (Ollama).

Child sessions: `agents={marker: turns}` gives each child its own script. A request whose first
user message contains `marker` (a child's task carries it) takes its turns from that script,
with its own order and `turn_by` bookkeeping, so parallel children get their own answers
whatever order their requests arrive in; every other request takes the main turns. In a
script file, `"agents": {marker: [turns]}` sits beside `"turns"`.

As a separate process (for tests that outlive the client, e.g. crash/resume):
`python -m comal.testing.fake_server --script script.json --port-file PATH [--window N]`
writes the port to PATH once listening and serves until SIGTERM/SIGINT; `GET /_fake/stats`
returns the stats as JSON and `GET /_fake/requests` the received bodies.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from comal.messages import JSONObject, JSONValue
from comal.testing.fake_checks import (
    CHECKS,
    TokenEstimator,
    answered_call_ids,
    count_request_tokens,
    requested_output_tokens,
)
from comal.testing.fake_errors import error_answer, invalid_request_answer
from comal.testing.fake_http import FakeHandler, wire_of
from comal.testing.fake_script import FakeTurn, load_script, parse_turns
from comal.testing.fake_wires import ErrorAnswer, RenderContext
from comal.testing.loopback import LoopbackService


@dataclass(frozen=True, slots=True)
class FakeServerOptions:
    """How the fake server behaves beyond its turns."""

    window: int | None = None
    """Largest request (in estimated tokens) accepted; None accepts any size."""
    model: str = "fake-model"
    overflow_form: str = "openai"
    """Chat endpoint overflow body style for size overflows (see `fake_script`)."""
    count_output_reserve: bool = False
    """Also refuse requests whose input + requested output exceed `window`."""
    advertised_window: int | None = None
    """Window the discovery endpoints report (default: `window`, else 131,072)."""
    max_output: int = 8_192
    discovery_style: str = "all"
    """`all`, `vllm`, `llamacpp`, `ollama`, `anthropic` or `none`."""
    ollama_num_ctx: int | None = None
    turn_by: str = "order"
    """`order`: each request takes the next turn. `answered`: a request takes the turn after the
    last scripted turn whose tool calls this or an earlier request answered (the first turn
    while none is), so a client killed mid-stream and resumed gets the same turn again, even
    when a checkpoint has since replaced the answered calls (crash/resume tests)."""


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One model request as the server received it."""

    path: str
    wire: str
    body: JSONObject
    headers: dict[str, str]
    digest: str = ""
    """`sha256:…` of the body's bytes as they arrived (what `provider.request` must record)."""


@dataclass(frozen=True, slots=True)
class FakeStats:
    """Counters of a fake server's life."""

    requests: int
    served: int
    orphan_violations: int
    overflows: int
    unexpected_requests: int
    remaining_turns: int
    violations: tuple[str, ...] = ()
    abandoned_streams: int = 0
    """Streams the client closed before their end (a cancel, a crash)."""

    def to_json(self) -> JSONObject:
        """JSON form (for `/_fake/stats`)."""
        return {
            "requests": self.requests,
            "served": self.served,
            "orphan_violations": self.orphan_violations,
            "overflows": self.overflows,
            "unexpected_requests": self.unexpected_requests,
            "remaining_turns": self.remaining_turns,
            "violations": list(self.violations),
            "abandoned_streams": self.abandoned_streams,
        }


@dataclass(slots=True)
class _Queue:
    """One script (the main one, or a child's) and how far it has been served."""

    turns: list[FakeTurn]
    next_turn: int = 0
    answered_through: int = -1
    """Highest turn index whose tool calls a request has answered (`turn_by = "answered"`)."""


@dataclass(slots=True)
class _State:
    main: _Queue
    agents: dict[str, _Queue] = field(default_factory=dict)
    requests: int = 0
    served: int = 0
    orphan_violations: int = 0
    overflows: int = 0
    unexpected: int = 0
    abandoned: int = 0
    violations: list[str] = field(default_factory=list)
    received: list[ReceivedRequest] = field(default_factory=list)


def _as_turns(turns: Sequence[FakeTurn | str | Mapping[str, Any]]) -> list[FakeTurn]:
    out: list[FakeTurn] = []
    for turn in turns:
        out.append(turn if isinstance(turn, FakeTurn) else parse_turns([turn])[0])
    return out


class FakeServer(LoopbackService):
    """The loopback fake provider (see the module docstring)."""

    handler = FakeHandler

    def __init__(
        self,
        turns: Sequence[FakeTurn | str | Mapping[str, Any]] = (),
        *,
        options: FakeServerOptions | None = None,
        estimator: TokenEstimator | None = None,
        port: int = 0,
        agents: Mapping[str, Sequence[FakeTurn | str | Mapping[str, Any]]] | None = None,
        **option_values: Any,
    ) -> None:
        """Args:
        turns: scripted turns (`FakeTurn`, a plain text, or a JSON-style mapping).
        options: server options; keyword arguments override single fields.
        estimator: request size function (default: o200k count of the request's texts).
        port: port to bind (0 picks a free one).
        agents: child scripts by marker (see the module docstring).
        """
        self.options = replace(options or FakeServerOptions(), **option_values)
        self.estimator = estimator or count_request_tokens
        self._state = _State(
            _Queue(_as_turns(turns)),
            {marker: _Queue(_as_turns(script)) for marker, script in (agents or {}).items()},
        )
        self._lock = threading.Lock()
        # A short poll interval keeps `stop()` (which waits for the loop to notice) fast.
        super().__init__(port=port, poll_interval=0.02)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` (Anthropic-style base URL)."""
        return self.root

    @property
    def openai_base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1` (OpenAI-style base URL)."""
        return f"{self.base_url}/v1"

    # --- script and observations -------------------------------------------------------------

    def add_turns(self, *turns: FakeTurn | str | Mapping[str, Any]) -> None:
        """Append turns to the script."""
        with self._lock:
            self._state.main.turns.extend(_as_turns(turns))

    def stats(self) -> FakeStats:
        """A snapshot of the counters."""
        with self._lock:
            s = self._state
            return FakeStats(
                requests=s.requests,
                served=s.served,
                orphan_violations=s.orphan_violations,
                overflows=s.overflows,
                unexpected_requests=s.unexpected,
                remaining_turns=sum(
                    len(q.turns) - q.next_turn for q in (s.main, *s.agents.values())
                ),
                violations=tuple(s.violations),
                abandoned_streams=s.abandoned,
            )

    @property
    def received(self) -> list[ReceivedRequest]:
        """Every model request received, in order."""
        with self._lock:
            return list(self._state.received)

    # --- request handling (called from handler threads) --------------------------------------

    def advertised_window(self) -> int:
        """The window the discovery endpoints report."""
        return self.options.advertised_window or self.options.window or 131_072

    def answer(
        self, path: str, body: JSONObject, headers: dict[str, str], digest: str = ""
    ) -> tuple[str, FakeTurn | ErrorAnswer, RenderContext]:
        """Decide the answer to a model request: a turn to render or an error."""
        wire = wire_of(path) or ""
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        tokens = self.estimator(body)
        ctx = RenderContext(
            model=str(body.get("model") or self.options.model),
            serial=0,
            input_tokens=tokens,
            include_usage=bool(_get(body, "stream_options", "include_usage")),
            include_encrypted="reasoning.encrypted_content" in _strs(body.get("include")),
        )
        with self._lock:
            s = self._state
            s.requests += 1
            s.received.append(ReceivedRequest(path, wire, body, headers, digest))
            ctx = replace(ctx, serial=s.requests)
            problems = CHECKS[wire](body)
            if problems:
                s.orphan_violations += 1
                s.violations.extend(problems)
                return wire, invalid_request_answer(wire, problems[0]), ctx
            window = self.options.window
            output = requested_output_tokens(body)
            if window is not None and tokens > window:
                s.overflows += 1
                return wire, self._overflow(wire, "context_length", tokens, output), ctx
            if (
                window is not None
                and self.options.count_output_reserve
                and tokens + output > window
            ):
                s.overflows += 1
                return wire, self._overflow(wire, "context_length_output", tokens, output), ctx
            queue, name = _route(s, body)
            index = queue.next_turn
            if self.options.turn_by == "answered":
                answered = _last_answered(queue.turns, body)
                queue.answered_through = max(queue.answered_through, answered)
                index = queue.answered_through + 1
            if index >= len(queue.turns):
                s.unexpected += 1
                message = (
                    f"fake server: unexpected request {s.requests}: the {name} script has"
                    f" {len(queue.turns)} turn(s) and all were used"
                )
                answer = invalid_request_answer(wire, message, status=500)
                # Retrying cannot conjure a turn: tell clients not to.
                answer.headers["x-should-retry"] = "false"
                return wire, answer, ctx
            turn = queue.turns[index]
            queue.next_turn = max(queue.next_turn, index + 1)
            s.served += 1
        if turn.error is not None and not turn.error_in_stream:
            return wire, self.error_for_turn(wire, turn, tokens, output, key), ctx
        return wire, turn, ctx

    def note_unexpected(self) -> None:
        """Count a request the server has no route or turn for."""
        with self._lock:
            self._state.unexpected += 1

    def note_abandoned(self) -> None:
        """Count a stream whose client went away before its end."""
        with self._lock:
            self._state.abandoned += 1

    def _overflow(self, wire: str, kind: str, tokens: int, output: int) -> ErrorAnswer:
        return error_answer(
            wire,
            kind,
            form=None if kind == "context_length_output" else self.options.overflow_form,
            tokens=tokens,
            window=self.options.window or 0,
            output=output,
        )

    def error_for_turn(
        self, wire: str, turn: FakeTurn, tokens: int, output: int, key: str
    ) -> ErrorAnswer:
        return error_answer(
            wire,
            turn.error or "invalid_request",
            form=turn.error_form,
            tokens=tokens,
            window=self.options.window or max(1, tokens - 1),
            output=output,
            retry_after=turn.retry_after,
            key_seen=key,
        )


def _get(obj: JSONValue, *path: str) -> JSONValue:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _strs(value: JSONValue) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _first_user_text(body: JSONObject) -> str:
    """The first user message of a request on any wire, as JSON text (markers are searched
    in it, so its exact shape does not matter)."""
    items = body.get("messages", body.get("input"))
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("role") == "user":
            return json.dumps(item, ensure_ascii=False)
    return ""


def _route(s: _State, body: JSONObject) -> tuple[_Queue, str]:
    """The script a request takes its turn from, and its name for messages."""
    if s.agents:
        first = _first_user_text(body)
        for marker, queue in s.agents.items():
            if marker in first:
                return queue, f"{marker!r} child"
    return s.main, "main"


def _last_answered(turns: Sequence[FakeTurn], body: JSONObject) -> int:
    """Index of the last turn whose tool calls the request answers (-1: none)."""
    answered = answered_call_ids(body.get("messages", body.get("input")))
    last = -1
    for index, turn in enumerate(turns):
        if any(call.call_id in answered for call in turn.tool_calls):
            last = index
    return last


def main(argv: Sequence[str] | None = None) -> int:
    """Run a fake server as its own process (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m comal.testing.fake_server")
    parser.add_argument("--script", type=Path, required=True, help="JSON script of turns")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the port")
    parser.add_argument("--window", type=int, default=None, help="largest request in tokens")
    parser.add_argument("--model", default=None)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    turns, raw_options = load_script(args.script)
    raw_agents = raw_options.pop("agents", None) or {}
    if not isinstance(raw_agents, dict):
        raise SystemExit(f"{args.script}: 'agents' must map markers to lists of turns")
    agents = {str(marker): parse_turns(script) for marker, script in raw_agents.items()}
    known = {f.name for f in fields(FakeServerOptions)}
    options = FakeServerOptions(**{k: v for k, v in raw_options.items() if k in known})
    if args.window is not None:
        options = replace(options, window=args.window)
    if args.model is not None:
        options = replace(options, model=args.model)
    server = FakeServer(turns, options=options, port=args.port, agents=agents).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # Written atomically so a waiting test never reads a half-written port.
    tmp = args.port_file.with_name(args.port_file.name + ".tmp")
    tmp.write_text(str(server.port), encoding="utf-8")
    tmp.replace(args.port_file)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
