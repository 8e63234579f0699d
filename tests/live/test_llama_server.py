"""Comal against the real llama.cpp `llama-server` (SmolLM2-135M-Instruct) on loopback.

Each test runs `python -m comal` as a subprocess (or the provider API) against a server the
conftest started with `-c 4096` or `-c 8192`; nothing here is faked. The model is tiny: tests
assert what Comal does with what the server answers, never the model's wording.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from comal.config import ProviderConfig
from comal.messages import user_text
from comal.providers.base import Capabilities, CountsTokens, ModelRequest
from comal.providers.factory import make_adapter
from comal.providers.identify import identify_server
from comal.providers.reply import collect
from comal.providers.wires import discover_window
from comal.usage import Usage
from tests.e2e.headless_support import Run, comal, ledger_at
from tests.live.conftest import MODEL_ID, LlamaServer
from tests.live.gateway import Gateway

pytestmark = pytest.mark.live


def configure(workspace: Path, base_url: str, *extra: str) -> None:
    """`.comal/config.toml` for the server at `base_url` (TOML lines in `extra` appended)."""
    lines = [
        'default_provider = "llama"',
        "[providers.llama]",
        'wire = "openai-chat"',
        f'base_url = "{base_url}"',
        f'model = "{MODEL_ID}"',
        "max_retries = 1",
        *extra,
    ]
    (workspace / ".comal").mkdir(parents=True, exist_ok=True)
    (workspace / ".comal" / "config.toml").write_text("\n".join(lines) + "\n")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("The launch code is 4417.\n")
    return ws


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def run(workspace: Path, home: Path, *args: str) -> Run:
    return comal(*args, cwd=workspace, env_home=home, timeout=600)


def kinds(home: Path, session_id: str) -> list[str]:
    with ledger_at(home) as ledger:
        return [e.kind for e in ledger.entries(session_id)]


def payloads(home: Path, session_id: str, kind: str) -> list[dict[str, object]]:
    with ledger_at(home) as ledger:
        return [dict(e.payload) for e in ledger.entries(session_id, kinds=(kind,))]


def measured_input(reply: dict[str, object]) -> int:
    """The input tokens the server reported for a recorded reply."""
    usage = reply["usage"]
    assert isinstance(usage, dict)
    total = Usage.from_json(usage).total_input
    assert total is not None
    return total


def only_session(home: Path) -> str:
    with ledger_at(home) as ledger:
        (info,) = ledger.sessions()
        return info.id


@pytest.mark.parametrize("size", ["4k", "8k"])
async def test_the_server_is_identified_and_its_runtime_window_discovered(
    size: str, server_4k: LlamaServer, server_8k: LlamaServer
) -> None:
    server = server_4k if size == "4k" else server_8k
    cfg = ProviderConfig(name="llama", wire="openai-chat", base_url=server.base_url, model="")
    async with httpx2.AsyncClient() as client:
        found = await identify_server(client, server.root)
        window = await discover_window(
            ProviderConfig(
                name="llama", wire="openai-chat", base_url=server.base_url, model=MODEL_ID
            ),
            client,
            None,
        )
    assert found is not None
    assert (found.kind, found.models) == ("llama.cpp", (MODEL_ID,))
    assert cfg.base_url == found.base_url
    assert window is not None
    assert (window.window, window.note) == (server.n_ctx, "llama.cpp /props n_ctx")


async def test_the_servers_exact_count_is_the_prompt_it_reports(server_4k: LlamaServer) -> None:
    cfg = ProviderConfig(
        name="llama", wire="openai-chat", base_url=server_4k.base_url, model=MODEL_ID
    )
    caps = Capabilities(4_096, 8, "discovered", window_note="llama.cpp /props n_ctx")
    request = ModelRequest(
        MODEL_ID,
        "You are terse.",
        (user_text("Name three colours."),),
        max_output_tokens=8,
    )
    async with httpx2.AsyncClient() as client:
        adapter = make_adapter(cfg, client=client, api_key=None, capabilities=caps)
        assert isinstance(adapter, CountsTokens)
        counted = await adapter.count_input_tokens(request)
        reply = await collect(adapter.stream(request))
    assert counted is not None
    assert counted == reply.usage.total_input


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_say_hi_in_a_4k_window_in_every_output_format(
    fmt: str, server_4k: LlamaServer, workspace: Path, home: Path
) -> None:
    configure(workspace, server_4k.base_url)
    result = run(workspace, home, "-p", "say hi", "--output-format", fmt)
    assert result.code == 0, result.stdout + result.stderr
    if fmt == "text":
        assert result.stdout.strip()
    elif fmt == "json":
        report = json.loads(result.stdout)
        assert report["status"] == "answered"
        assert report["answer"].strip()
    else:
        events = result.events()
        types = [e["type"] for e in events]
        assert types[0] == "session_opened"
        assert "turn_started" in types
        assert events[-1]["type"] == "finished"
    session = only_session(home)
    (started,) = payloads(home, session, "session.started")
    assert started["window"] == {"tokens": 4_096, "source": "discovered"}
    (request,) = payloads(home, session, "provider.request")
    assert isinstance(request["output_reserve"], int)
    assert 256 <= request["output_reserve"] <= 4_096 // 2
    calibrations = payloads(home, session, "context.calibrated")
    assert [c["source"] for c in calibrations][:1] in (["server_count"], [])
    (answer,) = payloads(home, session, "message.assistant")
    assert measured_input(answer) > 1_000  # the tools were rendered into the prompt


def test_an_oversized_conversation_is_refused_relieved_and_answered(
    server_4k: LlamaServer, server_8k: LlamaServer, workspace: Path, home: Path
) -> None:
    # Behind a gateway that forwards model calls only, Comal cannot discover the window. The
    # first turn fits the 8k server; the session then resumes on the 4k one, whose own
    # refusal (HTTP 400, exceeds the available context size) is the only sign of its size.
    log = "\n".join(
        f"{i:05d} worker-{i % 7} finished job {i * 37 % 1000} in {i % 90} ms" for i in range(170)
    )
    # Behind the gateway the window is unknown (45,000 assumed until the 4k server refuses), so
    # the delegation tools would be offered by default; their ~770 schema tokens cannot fit a
    # 4,096-token window beside the native tools, which is not what this test is about.
    agents_off = ("[agents]", "enabled = false")
    # The 135M model rambles up to the output reserve (thousands of tokens in the assumed
    # window, minutes on a busy machine); a stop sequence (a server option, through
    # extra_body) keeps each answer to one line so each turn ends as an answer.
    one_line = ("[providers.llama.extra_body]", 'stop = [".", "\\n"]')
    with Gateway(server_8k.root) as big:
        configure(workspace, big.base_url, *agents_off, *one_line)
        first = run(workspace, home, "-p", f"Here is a log:\n{log}\nHow many lines?")
    assert first.code == 0, first.stdout + first.stderr
    session = only_session(home)
    (answered,) = payloads(home, session, "message.assistant")
    assert measured_input(answered) > 4_096
    with Gateway(server_4k.root) as small:
        configure(workspace, small.base_url, *agents_off, *one_line)
        second = run(workspace, home, "--resume", session, "-p", "say hi")
    assert second.code == 0, second.stdout + second.stderr
    errors = payloads(home, session, "provider.error")
    assert [e["code"] for e in errors] == ["CONTEXT_LENGTH"]
    calibrated = [
        c for c in payloads(home, session, "context.calibrated") if c["source"] == "context_length"
    ]
    assert calibrated
    assert calibrated[-1]["limit_tokens"] == 4_096
    seen = kinds(home, session)
    assert "checkpoint" in seen or "projection" in seen
    assert seen.count("message.assistant") == 2


def test_a_server_that_stops_replies_early_ends_in_output_length(
    server_clamped: LlamaServer, workspace: Path, home: Path
) -> None:
    configure(workspace, server_clamped.base_url)
    result = run(
        workspace,
        home,
        "-p",
        "Write a long story about a lighthouse keeper, at least 500 words.",
        "--output-format",
        "json",
    )
    report = json.loads(result.stdout)
    assert result.code == 4, result.stdout + result.stderr
    assert report["status"] == "failed"
    assert "OUTPUT_LENGTH" in json.dumps(report)
    assert "4,096-token window" in json.dumps(report)
    session = only_session(home)
    discarded = payloads(home, session, "response.discarded")
    reserves = [p["output_reserve"] for p in payloads(home, session, "provider.request")]
    assert discarded
    assert all(d["reason"] == "OUTPUT_LENGTH" for d in discarded)
    assert all(isinstance(r, int) and r <= 4_096 // 2 for r in reserves)


def test_a_forced_tool_choice_runs_a_tool_loop_in_a_4k_window(
    server_4k: LlamaServer, workspace: Path, home: Path
) -> None:
    # The 135M model never picks a tool by itself. `tool_choice = "required"` (through
    # extra_body) makes llama-server constrain the reply with a grammar that must end in a tool
    # call; the ask's opening `<tool_call>` (the tag the chat template shows for calls) makes
    # the model open that call at once instead of rambling up to the output limit first. Comal
    # sends `auto` once the call is answered, so the model then answers in text. On some CPUs
    # its greedy answer repeats "The launch code is 4417." up to the output limit (the kernels a
    # native build compiles for the CPU round differently); a stop at a sentence's end keeps
    # the answer to one sentence, as in the multi-turn test. A call's JSON holds neither stop.
    configure(
        workspace,
        server_4k.base_url,
        "[providers.llama.extra_body]",
        'tool_choice = "required"',
        'stop = [". ", ".\\n"]',
    )
    result = run(workspace, home, "-p", "<tool_call> Read notes.txt", "--output-format", "json")
    assert result.code == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "answered"
    assert report["answer"].strip()
    session = only_session(home)
    (started,) = payloads(home, session, "session.started")
    assert started["window"] == {"tokens": 4_096, "source": "discovered"}
    replies = payloads(home, session, "message.assistant")
    assert [r["finish"] for r in replies] == ["tool_calls", "stop"]
    (result_entry,) = payloads(home, session, "tool.result")
    assert (result_entry["name"], result_entry["status"]) == ("Read", "ok")
    body = result_entry["body"]
    assert isinstance(body, dict)
    with ledger_at(home) as ledger:
        output = ledger.blob(str(body["blob"])).decode()
    assert "The launch code is 4417." in output
    # The tool result went back: the second prompt the server measured is the first one plus
    # the call and its result.
    first, second = (measured_input(r) for r in replies)
    assert second > first > 1_000
    assert [c["source"] for c in payloads(home, session, "context.calibrated")][:1] == [
        "server_count"
    ]
