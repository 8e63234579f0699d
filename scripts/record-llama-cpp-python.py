#!/usr/bin/env python3
"""Record what the real llama-cpp-python server answers, for tests/fixtures/llama_cpp_python/.

    python3 scripts/record-llama-cpp-python.py --python /path/to/venv/bin/python --model M.gguf

The venv must have `llama-cpp-python[server]` installed (it compiles llama.cpp: minutes). The
script starts `python -m llama_cpp.server` on loopback with a 2,048-token window and the
`chatml-function-calling` chat format, sends each
request below exactly as bytes, and writes every exchange (request body, status, headers and
the raw response body) as JSON. Tests replay them with `comal.testing.replay_server`.
Only the standard library is used, so any Python 3.11 runs it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "llama_cpp_python"
N_CTX = 2_048
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Read",
            "description": "Read a text file of the workspace and return its numbered lines.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "File to read."}},
                "required": ["path"],
            },
        },
    }
]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(port: int, path: str, body: dict[str, Any]) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    raw = json.dumps(body, separators=(",", ":")).encode()
    conn.request("POST", path, body=raw, headers={"content-type": "application/json"})
    response = conn.getresponse()
    data = response.read().decode("utf-8", "replace")
    headers = {k.lower(): v for k, v in response.getheaders() if k.lower() == "content-type"}
    conn.close()
    return {
        "request": {"method": "POST", "path": path, "body": body},
        "response": {"status": response.status, "headers": headers, "body": data},
    }


def _chat(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "SmolLM2-135M-Instruct", "messages": messages, **extra}


def record(port: int) -> dict[str, list[dict[str, Any]]]:
    """Every scenario: name → exchanges in the order sent."""
    system = {"role": "system", "content": "You are a coding agent. Use tools when they help."}
    huge = {"role": "user", "content": "Summarise this log.\n" + "line of log text\n" * 1_200}
    oversize = _chat([system, huge], max_tokens=256, stream=True)
    probe = _chat([system, huge], max_tokens=1, stream=False)
    call = {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
    history = [
        system,
        {"role": "user", "content": "Read README.md"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1\t# Demo"},
    ]
    ask = [system, {"role": "user", "content": "Read README.md"}]
    auto = _chat(ask, tools=TOOLS, tool_choice="auto", max_tokens=32, stream=False)
    return {
        "empty_stream_on_oversize": [
            _post(port, "/v1/chat/completions", oversize),
            _post(port, "/v1/chat/completions", probe),
        ],
        "null_content_500": [
            _post(port, "/v1/chat/completions", _chat(history, tools=TOOLS, max_tokens=8)),
            _post(
                port,
                "/v1/chat/completions",
                _chat(
                    [*history[:2], {**history[2], "content": ""}, history[3]],
                    tools=TOOLS,
                    max_tokens=8,
                ),
            ),
        ],
        "tools_need_tool_choice": [
            _post(port, "/v1/chat/completions", _chat(ask, tools=TOOLS, max_tokens=8)),
            _post(
                port,
                "/v1/chat/completions",
                _chat(ask, tools=TOOLS, tool_choice="auto", max_tokens=8),
            ),
        ],
        # What a client that streams (Comal does) gets when the tools are rendered: the
        # chatml-function-calling handler raises "Automatic streaming tool choice is not
        # supported" inside the stream, which ends empty; without streaming it answers (the
        # one-token probe, then the whole request).
        "streamed_tool_choice_auto": [
            _post(port, "/v1/chat/completions", {**auto, "stream": True}),
            _post(port, "/v1/chat/completions", {**auto, "max_tokens": 1}),
            _post(port, "/v1/chat/completions", auto),
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="a Python with llama-cpp-python[server]")
    parser.add_argument("--model", required=True, help="the GGUF to serve")
    args = parser.parse_args()
    version = subprocess.run(
        [args.python, "-c", "import llama_cpp; print(llama_cpp.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    port = _port()
    server = subprocess.Popen(
        [
            args.python,
            "-m",
            "llama_cpp.server",
            "--model",
            args.model,
            "--n_ctx",
            str(N_CTX),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--model_alias",
            "SmolLM2-135M-Instruct",
            # SmolLM2's own template renders no tools. `chatml-function-calling` is the
            # server's tool-capable handler for ChatML models (SmolLM2's special tokens); it
            # renders the tools only when the request names a `tool_choice`.
            "--chat_format",
            "chatml-function-calling",
            "--seed",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    print("llama_cpp.server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.5)
        scenarios = record(port)
    finally:
        server.terminate()
        server.wait(30)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, exchanges in scenarios.items():
        doc = {
            "server": f"llama-cpp-python {version} (python -m llama_cpp.server), n_ctx {N_CTX},"
            f" chat_format chatml-function-calling, model {Path(args.model).name}",
            "recorded_by": "scripts/record-llama-cpp-python.py",
            "exchanges": exchanges,
        }
        (OUT / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{name}: " + ", ".join(str(e["response"]["status"]) for e in exchanges))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
