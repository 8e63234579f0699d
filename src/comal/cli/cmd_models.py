"""`comal models` and `comal doctor`: what is configured, its windows, and whether it answers.

`models` lists every configured provider with its model, effective context window and where
the window came from (`catalog`, `discovered`, `explicit`, `fallback`); `--json` prints the same
as JSON. `doctor` checks each provider's base URL is reachable and its key variable is set.
Neither ever prints a key: only the *name* of its environment variable and whether it is set.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx2

from comal.cli.configuring import run_config
from comal.config import Config, ProviderConfig
from comal.providers.discovery import server_root
from comal.providers.factory import combine_capabilities, resolve_capabilities


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
    doctor = subparsers.add_parser(
        "doctor", help="check each provider: base URL reachable and API key variable set"
    )
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.set_defaults(func=run_doctor)


def _key_state(config: Config, provider: ProviderConfig) -> str:
    if provider.api_key_env is None:
        return "no key configured"
    return "set" if config.api_key(provider) else "NOT SET"


async def run_models(args: argparse.Namespace) -> int:
    """List configured models and their windows."""
    config = run_config()
    rows: list[dict[str, Any]] = []
    async with httpx2.AsyncClient() as client:
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
    if not rows:
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


async def _reachable(client: httpx2.AsyncClient, provider: ProviderConfig) -> tuple[bool, str]:
    url = server_root(provider.base_url) + "/"
    try:
        response = await client.get(url, timeout=httpx2.Timeout(5.0))
    except httpx2.HTTPError as exc:
        return False, f"unreachable ({type(exc).__name__})"
    # Any HTTP answer (even 401 or 404) proves the server is there.
    return True, f"reachable (HTTP {response.status_code})"


async def run_doctor(args: argparse.Namespace) -> int:
    """Check reachability and keys: exit 4 when a provider is unreachable, 2 when a key is
    missing or nothing is configured."""
    config = run_config()
    healthy = True
    rows: list[dict[str, Any]] = []
    async with httpx2.AsyncClient() as client:
        for name in sorted(config.providers):
            provider = config.providers[name]
            reachable, detail = await _reachable(client, provider)
            key = _key_state(config, provider)
            healthy = healthy and reachable and key != "NOT SET"
            rows.append(
                {
                    "provider": name,
                    "base_url": provider.base_url,
                    "reachable": reachable,
                    "detail": detail,
                    "api_key_env": provider.api_key_env,
                    "api_key": key,
                }
            )
    if args.json:
        print(json.dumps({"ok": healthy, "providers": rows}, indent=2))
    else:
        if not rows:
            print("no providers configured", file=sys.stderr)
        for row in rows:
            status = "ok " if row["reachable"] and row["api_key"] != "NOT SET" else "BAD"
            env = row["api_key_env"] or "-"
            print(
                f"{status} {row['provider']:<12} {row['base_url']:<40} {row['detail']:<24}"
                f" key {env}: {row['api_key']}"
            )
    if any(not row["reachable"] for row in rows):
        return 4  # a provider error, as the README's exit-code table says
    return 0 if healthy and rows else 2
