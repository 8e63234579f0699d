"""`comal models` (and the `doctor` subcommand, in `cmd_doctor`): what is configured, its windows.

`models` lists every configured provider with its model, effective context window and where
the window came from (`catalog`, `discovered`, `explicit`, `fallback`), then the model servers
that identify themselves on loopback; `--json` prints the same as JSON. It never prints a key.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx2

from comal.cli.cmd_doctor import register_doctor
from comal.cli.configuring import run_config
from comal.providers.factory import combine_capabilities, resolve_capabilities
from comal.providers.identify import detect_loopback


def register(subparsers: Any) -> None:
    """Add the `models` and `doctor` subcommands."""
    models = subparsers.add_parser(
        "models", help="configured providers and models with their context windows"
    )
    models.add_argument("--json", action="store_true", help="print JSON")
    models.add_argument(
        "--no-discovery",
        action="store_true",
        help="do not ask the servers (catalog and explicit values only)",
    )
    models.set_defaults(func=run_models)
    register_doctor(subparsers)


async def run_models(args: argparse.Namespace) -> int:
    """List configured models and their windows."""
    config = run_config()
    rows: list[dict[str, Any]] = []
    async with httpx2.AsyncClient() as client:
        detected = [] if args.no_discovery else await detect_loopback(client)
        for name in sorted(config.providers):
            provider = config.providers[name]
            override = config.context.context_window
            if args.no_discovery:
                caps = combine_capabilities(provider, None, override)
            else:
                caps = await resolve_capabilities(
                    provider, client, config.api_key(provider), override
                )
            rows.append(
                {
                    "provider": name,
                    "default": name == config.default_provider,
                    "wire": provider.wire,
                    "model": provider.model,
                    "base_url": provider.base_url,
                    "context_window": caps.context_window,
                    "window_source": caps.window_source,
                    "window_note": caps.window_note,
                    "max_output_tokens": caps.max_output_tokens,
                }
            )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for server in detected:
        print(f"detected {server.describe()}")
    if not rows and not detected:
        print(
            "no providers configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add"
            " [providers.NAME] to config.toml",
            file=sys.stderr,
        )
        return 0
    for row in rows:
        mark = "*" if row["default"] else " "
        print(
            f"{mark} {row['provider']:<12} {row['wire']:<18} {row['model']:<28}"
            f" window {row['context_window']:>9,} ({row['window_source']})"
            f"  max output {row['max_output_tokens']:,}"
        )
        print(f"    {row['window_note']}")
    return 0
