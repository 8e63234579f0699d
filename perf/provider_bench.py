"""Provider benchmarks: SSE decoding throughput per wire, and round trips to the fake server.

Run: `.venv/bin/python -m perf.provider_bench [--chunks N] [--round-trips N]`.
Decoding uses the fake server's own renderings of one long turn (text in 16-character deltas,
plus a tool call), decoded by the pure `decode_stream` of each adapter. Round trips use the real
adapters over httpx2 against a loopback `FakeServer`. Figures go to stdout as a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx2

from comal.config import ProviderConfig
from comal.messages import user_text
from comal.providers import anthropic_messages, openai_chat, openai_responses
from comal.providers.base import ModelRequest
from comal.providers.factory import make_provider
from comal.providers.reply import collect
from comal.testing.fake_script import FakeToolCall, FakeTurn, FakeUsage
from comal.testing.fake_server import FakeServer
from comal.testing.fake_wires import (
    RenderContext,
    anthropic_events,
    chat_events,
    responses_events,
)

WIRES = {
    "openai-chat": (chat_events, openai_chat.decode_stream),
    "openai-responses": (responses_events, openai_responses.decode_stream),
    "anthropic-messages": (anthropic_events, anthropic_messages.decode_stream),
}


def bench_decode(chunks: int) -> list[tuple[str, str]]:
    """Events per second and MB/s of each wire's pure decoder."""
    turn = FakeTurn(
        text="x" * (16 * chunks),
        tool_calls=(FakeToolCall("call_1", "shell", {"cmd": "ls " + "a" * 200}),),
        usage=FakeUsage(input_tokens=1000, output_tokens=chunks),
    )
    ctx = RenderContext(model="m", serial=1, input_tokens=1000)
    rows = []
    for wire, (render, decode) in WIRES.items():
        lines: list[str] = []
        for event, data in render(turn, ctx):
            if event:
                lines.append(f"event: {event}")
            lines.extend([f"data: {data}", ""])
        size = sum(len(line) + 1 for line in lines)
        t0 = time.perf_counter()
        events = list(decode(lines, model="m"))
        elapsed = time.perf_counter() - t0
        rows.append(
            (
                f"decode {wire} ({len(events):,} events, {size / 1e6:.1f} MB)",
                f"{len(events) / elapsed:,.0f} events/s, {size / 1e6 / elapsed:.1f} MB/s",
            )
        )
    return rows


async def bench_round_trips(count: int) -> list[tuple[str, str]]:
    """Latency of a short streamed reply through the real adapter, per wire (loopback)."""
    rows = []
    with FakeServer(["a short reply"] * (count * len(WIRES))) as server:
        async with httpx2.AsyncClient() as client:
            for wire in WIRES:
                base = server.base_url if wire == "anthropic-messages" else server.openai_base_url
                cfg = ProviderConfig(name="b", wire=wire, base_url=base, model="m", max_retries=0)
                provider = make_provider(
                    cfg, client=client, api_key="k", context_window_override=None
                )
                request = ModelRequest("m", "sys", (user_text("hello"),))
                await collect(provider.stream(request))  # warm-up (tokenizer load, connect)
                times = []
                for _ in range(count - 1):
                    t0 = time.perf_counter()
                    await collect(provider.stream(request))
                    times.append(time.perf_counter() - t0)
                cuts = statistics.quantiles(times, n=100)
                rows.append(
                    (
                        f"round trip {wire} (fake server, loopback)",
                        f"p50 {cuts[49] * 1000:.1f} ms, p99 {cuts[98] * 1000:.1f} ms",
                    )
                )
    return rows


def main() -> None:
    """Print the figures as a Markdown table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--round-trips", type=int, default=100)
    args = parser.parse_args()
    rows = bench_decode(args.chunks) + asyncio.run(bench_round_trips(args.round_trips))
    print("| figure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
